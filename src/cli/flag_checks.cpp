#include "cli/flag_checks.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace crosstrain::cli {

namespace {

std::string plain(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

CLI::Validator range_check(double lo, double hi, bool integer) {
  const std::string range = plain(lo) + " and " + plain(hi);
  auto check = [=](std::string& text) -> std::string {
    const std::string expect = std::string("must be ") + (integer ? "an integer" : "a number") + " between " + range;
    const std::string got = " (got '" + text.substr(0, 40) + (text.size() > 40 ? "...'" : "'") + ")";
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || std::isnan(v)) return expect + got;
    if (!(v >= lo && v <= hi)) return expect + got;
    if (integer && v != std::floor(v)) return expect + got;
    return {};
  };
  return CLI::Validator(check, plain(lo) + ".." + plain(hi));
}

}  // namespace

CLI::Validator int_range(double lo, double hi) { return range_check(lo, hi, /*integer=*/true); }
CLI::Validator real_range(double lo, double hi) { return range_check(lo, hi, /*integer=*/false); }

}  // namespace crosstrain::cli
