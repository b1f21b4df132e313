#include "tools/analyze/csv_reader.h"

#include <cmath>
#include <cstdlib>

namespace crosstrain::analyze {

namespace {

constexpr int kEof = -1;

std::string trim(const std::string& s) {
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  size_t a = 0, b = s.size();
  while (a < b && blank(s[a])) ++a;
  while (b > a && blank(s[b - 1])) --b;
  return s.substr(a, b - a);
}

}  // namespace

CsvReader::CsvReader(const std::string& path) : in_(path, std::ios::binary), buf_(size_t{1} << 16) {}

int CsvReader::peek() {
  if (pos_ == len_) {
    in_.read(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    len_ = static_cast<size_t>(in_.gcount());
    pos_ = 0;
    if (len_ == 0) return kEof;
  }
  return static_cast<unsigned char>(buf_[pos_]);
}

int CsvReader::get() {
  int c = peek();
  if (c != kEof) ++pos_;
  return c;
}

bool CsvReader::next(std::vector<std::string>& cells) {
  cells.clear();
  int c = get();
  if (c == kEof) return false;
  if (record_ == 0 && c == 0xEF && peek() == 0xBB) {  // a UTF-8 byte-order mark
    get();
    if (peek() == 0xBF) get();
    c = get();
  }
  ++record_;
  std::string cur;
  bool quoted = false, text = false;  // text: the field holds more than blanks, or a closed quote
  for (;; c = get()) {
    if (c == kEof) {
      unterminated_ = quoted;
      break;
    }
    if (quoted) {
      if (c != '"') cur += static_cast<char>(c);
      else if (peek() == '"') cur += static_cast<char>(get());
      else quoted = false;
      continue;
    }
    if (c == ',') {
      cells.push_back(trim(cur));
      cur.clear(), text = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && peek() == '\n') get();
      break;
    } else if (c == '"' && !text) {
      quoted = text = true;
      cur.clear();  // the blanks before the quote
    } else {
      cur += static_cast<char>(c);
      text = text || (c != ' ' && c != '\t');
    }
  }
  cells.push_back(trim(cur));
  return true;
}

bool csv_decimal(const std::string& s, bool non_negative, double& value, const char*& why, double max_value) {
  size_t i = 0, digits = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') ++i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (digits > 0 && i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t k = i + 1, exponent = 0;
    if (k < s.size() && (s[k] == '-' || s[k] == '+')) ++k;
    while (k < s.size() && s[k] >= '0' && s[k] <= '9') ++k, ++exponent;
    if (exponent > 0) i = k;
  }
  if (s.empty()) return why = "empty", false;
  if (digits == 0 || i != s.size()) return why = "not a decimal number", false;
  value = std::strtod(s.c_str(), nullptr);
  if (!std::isfinite(value)) return why = "out of range", false;
  if (non_negative && value < 0) return why = "negative", false;
  if (value > max_value) return why = "implausibly large", false;
  return true;
}

void CsvBadCells::add(size_t record, const std::string& column, const std::string& value, const char* why) {
  add_at("record " + std::to_string(record) + " " + column, value, why);
}

void CsvBadCells::add_at(const std::string& where, const std::string& value, const char* why) {
  if (++count_ > 3) return;
  std::string shown = value.size() > 40 ? value.substr(0, 40) + "..." : value;
  for (char& ch : shown)
    if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';
  examples_ += (examples_.empty() ? "" : "; ") + where + " '" + shown + "': " + why;
}

void CsvBadCells::note_to(std::vector<std::string>& notes, const char* consequence) const {
  if (count_ > 0)
    notes.push_back(file_ + ": " + std::to_string(count_) + " bad " + noun_ + "(s), " + consequence + " (" + examples_ +
                    (count_ > 3 ? "; ..." : "") + ")");
}

}  // namespace crosstrain::analyze
