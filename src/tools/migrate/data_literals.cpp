#include "tools/migrate/data_literals.h"

#include <utility>
#include <vector>

namespace crosstrain::migrate {

namespace {

bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(unsigned char c) { return c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c >= 0x80; }
bool is_ident_char(unsigned char c) { return is_ident_start(c) || is_digit(c); }

bool mentions_device(std::string_view text) {
  for (size_t i = 0; i + 4 <= text.size(); ++i) {
    auto lower = [&](size_t k) { return static_cast<char>(text[i + k] | 0x20); };
    if ((lower(0) == 'c' && lower(1) == 'u' && lower(2) == 'd' && lower(3) == 'a') ||
        (lower(0) == 'n' && lower(1) == 'c' && lower(2) == 'c' && lower(3) == 'l'))
      return true;
  }
  return false;
}

class Scanner {
 public:
  explicit Scanner(std::string_view src) : s_(src) {}

  // Fills `regions` with the [start, end) insides to blank; false when the tokens do not line up.
  bool run(std::vector<std::pair<size_t, size_t>>& regions, size_t min_length) {
    struct Open {
      size_t start;
      char close;
      bool data;
    };
    std::vector<Open> open;
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (c == '(' || c == '[' || c == '{') {
        if (open.size() > 10000) return false;
        open.push_back({++i_, c == '(' ? ')' : c == '[' ? ']' : '}', true});
      } else if (c == ')' || c == ']' || c == '}') {
        if (open.empty() || open.back().close != static_cast<char>(c)) return false;
        Open inner = open.back();
        open.pop_back();
        if (inner.data && i_ - inner.start >= min_length) {
          while (!regions.empty() && regions.back().first >= inner.start) regions.pop_back();
          regions.emplace_back(inner.start, i_);
        }
        if (!inner.data && !open.empty()) open.back().data = false;
        ++i_;
      } else if (c == '"' || c == '\'') {
        size_t begin = i_;
        if (!skip_string(false)) return false;
        if (!open.empty() && mentions_device(s_.substr(begin, i_ - begin))) open.back().data = false;
      } else if (is_ident_start(c)) {
        size_t begin = i_;
        while (i_ < s_.size() && is_ident_char(static_cast<unsigned char>(s_[i_]))) ++i_;
        std::string_view word = s_.substr(begin, i_ - begin);
        if (i_ < s_.size() && (s_[i_] == '"' || s_[i_] == '\'') && is_string_prefix(word)) {
          bool formatted = word.find_first_of("fF") != std::string_view::npos;
          if (!skip_string(formatted)) return false;
          if (!open.empty() && (formatted || mentions_device(s_.substr(begin, i_ - begin)))) open.back().data = false;
        } else if (!open.empty() && word != "True" && word != "False" && word != "None") {
          open.back().data = false;
        }
      } else if (is_digit(c) || (c == '.' && i_ + 1 < s_.size() && is_digit(static_cast<unsigned char>(s_[i_ + 1])))) {
        skip_number();
      } else {
        ++i_;
        bool neutral = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == ',' || c == ':' ||
                       c == '-' || c == '+' || c == '\\';
        if (!neutral && !open.empty()) open.back().data = false;
      }
    }
    return open.empty();
  }

 private:
  static bool is_string_prefix(std::string_view word) {
    if (word.size() > 2) return false;
    for (char ch : word)
      if (std::string_view("rRbBuUfF").find(ch) == std::string_view::npos) return false;
    return true;
  }

  void skip_number() {
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (is_ident_char(c) || c == '.') {
        ++i_;
      } else if ((c == '+' || c == '-') && (s_[i_ - 1] | 0x20) == 'e') {
        ++i_;
      } else {
        break;
      }
    }
  }

  // At a quote: past the end of the string. An f-string's replacement fields are skipped as
  // code, with the strings inside them (which may reuse the outer quote since Python 3.12).
  bool skip_string(bool formatted) {
    if (++depth_ > 64) return false;
    const char quote = s_[i_];
    const bool triple = i_ + 2 < s_.size() && s_[i_ + 1] == quote && s_[i_ + 2] == quote;
    i_ += triple ? 3 : 1;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\\') {
        i_ += 2;
      } else if (c == quote && (!triple || (i_ + 2 < s_.size() && s_[i_ + 1] == quote && s_[i_ + 2] == quote))) {
        i_ += triple ? 3 : 1;
        --depth_;
        return true;
      } else if (c == '\n' && !triple) {
        return false;
      } else if (formatted && c == '{') {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == '{') i_ += 2;
        else if (!skip_field()) return false;
      } else {
        ++i_;
      }
    }
    return false;
  }

  // At the `{` of a replacement field: past its `}`.
  bool skip_field() {
    int level = 0;
    ++i_;
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"' || c == '\'') {
        if (!skip_string(false)) return false;
      } else if (is_ident_start(c)) {
        size_t begin = i_;
        while (i_ < s_.size() && is_ident_char(static_cast<unsigned char>(s_[i_]))) ++i_;
        if (i_ < s_.size() && (s_[i_] == '"' || s_[i_] == '\'') && is_string_prefix(s_.substr(begin, i_ - begin)) &&
            !skip_string(s_.substr(begin, i_ - begin).find_first_of("fF") != std::string_view::npos))
          return false;
      } else if (c == '(' || c == '[' || c == '{') {
        ++level;
        ++i_;
      } else if (c == ')' || c == ']' || (c == '}' && level > 0)) {
        --level;
        ++i_;
      } else if (c == '}') {
        ++i_;
        return true;
      } else {
        ++i_;
      }
    }
    return false;
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

std::string elide_data_literals(std::string_view source, size_t min_length) {
  if (source.size() < min_length) return {};
  std::vector<std::pair<size_t, size_t>> regions;
  if (!Scanner(source).run(regions, min_length) || regions.empty()) return {};
  std::string out(source);
  for (const auto& [start, end] : regions) {
    for (size_t k = start; k < end; ++k)
      if (out[k] != '\n' && out[k] != '\r') out[k] = ' ';
    out[start] = out[start] == '\n' || out[start] == '\r' ? out[start] : '0';
    if (out[start] != '0') {  // the inside starts with a line break: the 0 goes on the first blank
      for (size_t k = start; k < end; ++k)
        if (out[k] == ' ') {
          out[k] = '0';
          break;
        }
    }
  }
  return out;
}

}  // namespace crosstrain::migrate
