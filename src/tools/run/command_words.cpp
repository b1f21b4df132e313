#include "tools/run/command_words.h"

#include <regex>
#include <stdexcept>

namespace crosstrain::run {

namespace {

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(cur), cur.clear(), in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const size_t end = text.find('\'', i + 1);
      if (end == std::string::npos) throw std::invalid_argument("unterminated ' in \"" + text + "\"");
      cur += text.substr(i + 1, end - i - 1);
      i = end;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size() && std::string("\"\\$`").find(text[j + 1]) != std::string::npos)
          ++j;
        cur += text[j];
      }
      if (j >= text.size()) throw std::invalid_argument("unterminated \" in \"" + text + "\"");
      i = j;
    } else if (c == '\\' && i + 1 < text.size()) {
      cur += text[++i];
    } else {
      cur += c;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

bool is_assignment(const std::string& w) {
  static const std::regex assignment(R"([A-Za-z_][A-Za-z0-9_]*=.*)");
  return std::regex_match(w, assignment);
}

}  // namespace

CommandWords split_command(const std::string& text) {
  CommandWords c;
  const auto all = words(text);
  size_t i = 0;
  for (; i < all.size() && is_assignment(all[i]); ++i) {
    const auto eq = all[i].find('=');
    c.env[all[i].substr(0, eq)] = all[i].substr(eq + 1);
  }
  c.argv.assign(all.begin() + static_cast<long>(i), all.end());
  if (c.argv.empty()) throw std::invalid_argument("\"" + text + "\" holds no program to run");
  return c;
}

bool looks_like_key_values(const std::string& text) {
  std::vector<std::string> w;
  try {
    w = words(text);
  } catch (const std::invalid_argument&) {
    return false;
  }
  if (w.empty()) return true;  // the key=value parser says what is wrong with an empty side
  for (const auto& x : w)
    if (x.find('=') == std::string::npos) return false;
  return true;
}

}  // namespace crosstrain::run
