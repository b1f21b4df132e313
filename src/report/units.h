#pragma once
// Human-readable numbers for reports. Missing values are std::nullopt and render as "n/a":
// a report never invents a number it did not measure. A figure too large for fixed point (1e15
// and beyond, after its unit is chosen) prints in scientific notation with its unit ("1.00e+302 s"),
// a non-finite one as "nan"/"inf"/"-inf": never as a row of digits cut off without its unit.
#include <cstdint>
#include <optional>
#include <string>

namespace crosstrain::report {

std::string format_bytes(std::optional<int64_t> bytes);       // "5.52 GiB", "n/a"
std::string format_ms(std::optional<double> ms);              // "117.4 ms", "n/a"
std::string format_us(double us);                             // "12.3 us", "4.56 ms", "1.23 s"
std::string format_fixed(std::optional<double> v, int decimals);
std::string format_percent(std::optional<double> fraction, int decimals = 1);  // 0.123 -> "12.3%"
// Signed relative change b vs a: "+130.1%", "-48.3%"; "n/a" when either side is missing or a == 0.
std::string format_change(std::optional<double> a, std::optional<double> b);
std::string format_count(int64_t n);                          // "25,557,032"

}  // namespace crosstrain::report
