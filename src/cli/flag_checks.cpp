#include "cli/flag_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace crosstrain::cli {

namespace {

// What a user reads: "2^64 - 1" rather than twenty digits.
std::string plain_unsigned(uint64_t v) { return v == UINT64_MAX ? "2^64 - 1" : std::to_string(v); }

std::string got_text(const std::string& text) {
  return " (got '" + text.substr(0, 40) + (text.size() > 40 ? "...'" : "'") + ")";
}

std::string plain(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

CLI::Validator range_check(double lo, double hi, bool integer) {
  const std::string range = plain(lo) + " and " + plain(hi);
  auto check = [=](std::string& text) -> std::string {
    const std::string expect = std::string("must be ") + (integer ? "an integer" : "a number") + " between " + range;
    const std::string got = got_text(text);
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

CLI::Validator uint_range(uint64_t lo, uint64_t hi) {
  const std::string range = plain_unsigned(lo) + " and " + plain_unsigned(hi);
  auto check = [=](std::string& text) -> std::string {
    const std::string refusal = "must be an integer between " + range + got_text(text);
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return refusal;
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE || v < lo || v > hi) return refusal;
    return {};
  };
  return CLI::Validator(check, plain_unsigned(lo) + ".." + plain_unsigned(hi));
}

}  // namespace crosstrain::cli
