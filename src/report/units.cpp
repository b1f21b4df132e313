#include "report/units.h"

#include <cmath>
#include <cstdio>

namespace crosstrain::report {

namespace {
std::string printf_string(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
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
  return printf_string(*ms >= 100 ? "%.1f ms" : (*ms >= 1 ? "%.2f ms" : "%.3f ms"), *ms);
}

std::string format_us(double us) {
  if (std::fabs(us) >= 1e6) return printf_string("%.3f s", us / 1e6);
  if (std::fabs(us) >= 1e3) return printf_string("%.3f ms", us / 1e3);
  return printf_string("%.1f us", us);
}

std::string format_fixed(std::optional<double> v, int decimals) {
  if (!v || !std::isfinite(*v)) return v ? (std::isnan(*v) ? "nan" : (*v > 0 ? "inf" : "-inf")) : "n/a";
  char fmt[16];
  std::snprintf(fmt, sizeof fmt, "%%.%df", decimals);
  return printf_string(fmt, *v);
}

std::string format_percent(std::optional<double> fraction, int decimals) {
  if (!fraction) return "n/a";
  return format_fixed(*fraction * 100.0, decimals) + "%";
}

std::string format_change(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *a == 0.0 || !std::isfinite(*a) || !std::isfinite(*b)) return "n/a";
  return printf_string("%+.1f%%", (*b / *a - 1.0) * 100.0);
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
