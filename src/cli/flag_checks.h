#pragma once
// Range checks for numeric flags with messages a user can act on: "--threads: must be between 0
// and 1024 (got 10000)". CLI11's own PositiveNumber / NonNegativeNumber print the largest double
// (310 digits) as the range and let nan through; these print the range in plain numbers and
// refuse nan, inf and text that is not a number. Every numeric flag of every command carries one.
#include <CLI/CLI.hpp>
#include <cstdint>

namespace crosstrain::cli {

// Inclusive [lo, hi]; for an integer flag, a fraction is refused too.
CLI::Validator int_range(double lo, double hi);
CLI::Validator real_range(double lo, double hi);
// Inclusive [lo, hi] for an unsigned 64-bit flag (seeds), exact up to 2^64 - 1 where a double is
// not: only decimal digits pass, so "-1" cannot wrap around to 2^64 - 1.
CLI::Validator uint_range(uint64_t lo, uint64_t hi);
// A byte count with an optional unit (K, M, G, T, P, E, also KB/KiB ...: powers of 1024, any case)
// in [lo, hi]; a transform: the text becomes the plain number of bytes. Use with ->transform().
CLI::Validator byte_count(uint64_t lo, uint64_t hi);

}  // namespace crosstrain::cli
