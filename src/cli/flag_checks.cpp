#include "cli/flag_checks.h"

#include <cctype>
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

namespace {

// 1024^k for a unit of byte_count(), or 0 when `unit` names none.
uint64_t unit_factor(std::string unit) {
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.empty() || unit == "b") return 1;
  const std::string prefixes = "kmgtpe";
  const auto k = prefixes.find(unit[0]);
  const std::string rest = unit.substr(1);
  if (k == std::string::npos || !(rest.empty() || rest == "b" || rest == "i" || rest == "ib")) return 0;
  return uint64_t{1} << (10 * (k + 1));
}

// "1 TiB" rather than 1099511627776 where a limit is a whole power of 1024.
std::string plain_bytes(uint64_t v) {
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  for (int k = 5; k >= 0; --k) {
    const uint64_t f = uint64_t{1} << (10 * (k + 1));
    if (v >= f && v % f == 0) return std::to_string(v / f) + " " + units[k];
  }
  return std::to_string(v);
}

}  // namespace

CLI::Validator byte_count(uint64_t lo, uint64_t hi) {
  const std::string range = plain_bytes(lo) + " and " + plain_bytes(hi);
  auto check = [=](std::string& text) -> std::string {
    const std::string refusal =
        "must be a byte count between " + range + " (units K, M, G, T: powers of 1024)" + got_text(text);
    const auto digits = text.find_first_not_of("0123456789");
    if (digits == 0 || text.empty()) return refusal;
    const std::string number = text.substr(0, digits);
    std::string unit = digits == std::string::npos ? "" : text.substr(digits);
    unit.erase(0, unit.find_first_not_of(' '));
    const uint64_t factor = unit_factor(unit);
    errno = 0;
    const unsigned long long n = std::strtoull(number.c_str(), nullptr, 10);
    uint64_t bytes = 0;
    if (factor == 0 || errno == ERANGE || __builtin_mul_overflow(static_cast<uint64_t>(n), factor, &bytes)) return refusal;
    if (bytes < lo || bytes > hi) return refusal;
    text = std::to_string(bytes);
    return {};
  };
  return CLI::Validator(check, "BYTES");
}

}  // namespace crosstrain::cli
