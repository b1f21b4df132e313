#include "report/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace crosstrain::report {

namespace {

// Beyond this a fixed-point figure is a row of digits nobody reads (and 1e308 would not fit any
// buffer): it is printed in scientific notation instead, "1.00e+302 s".
constexpr double kFixedLimit = 1e15;

// `v` with `decimals` decimals and its unit ("12.35 ms"), in scientific notation past kFixedLimit,
// "nan"/"inf"/"-inf" when it is not finite. Never cut off.
std::string number_with_unit(double v, int decimals, const char* unit) {
  if (!std::isfinite(v)) return std::string(std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf")) + unit;
  char buf[96];
  if (std::fabs(v) >= kFixedLimit) std::snprintf(buf, sizeof buf, "%.2e%s", v, unit);
  else std::snprintf(buf, sizeof buf, "%.*f%s", decimals, v, unit);
  return buf;
}

}  // namespace

std::string format_bytes(std::optional<int64_t> bytes) {
  if (!bytes) return "n/a";
  double v = static_cast<double>(*bytes);
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(v) >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(*bytes));
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

std::string format_ms(std::optional<double> ms) {
  if (!ms) return "n/a";
  return number_with_unit(*ms, *ms >= 100 ? 1 : (*ms >= 1 ? 2 : 3), " ms");
}

std::string format_us(double us) {
  if (std::fabs(us) >= 1e6) return number_with_unit(us / 1e6, 3, " s");
  if (std::fabs(us) >= 1e3) return number_with_unit(us / 1e3, 3, " ms");
  return number_with_unit(us, 1, " us");
}

std::string format_fixed(std::optional<double> v, int decimals) {
  if (!v) return "n/a";
  return number_with_unit(*v, std::clamp(decimals, 0, 17), "");
}

std::string format_percent(std::optional<double> fraction, int decimals) {
  if (!fraction) return "n/a";
  return format_fixed(*fraction * 100.0, decimals) + "%";
}

std::string format_change(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *a == 0.0 || !std::isfinite(*a) || !std::isfinite(*b)) return "n/a";
  const double change = (*b / *a - 1.0) * 100.0;
  return (change >= 0 ? "+" : "") + number_with_unit(change, 1, "%");
}

std::string format_count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  int k = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (k && k % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++k;
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace crosstrain::report
