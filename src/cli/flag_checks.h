#pragma once
// Range checks for numeric flags with messages a user can act on: "--threads: must be between 0
// and 1024 (got 10000)". CLI11's own PositiveNumber / NonNegativeNumber print the largest double
// (310 digits) as the range and let nan through; these print the range in plain numbers and
// refuse nan, inf and text that is not a number. Every numeric flag of every command carries one.
#include <CLI/CLI.hpp>

namespace crosstrain::cli {

// Inclusive [lo, hi]; for an integer flag, a fraction is refused too.
CLI::Validator int_range(double lo, double hi);
CLI::Validator real_range(double lo, double hi);

}  // namespace crosstrain::cli
