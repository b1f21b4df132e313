#include "tools/run/run_options.h"

#include <map>
#include <regex>
#include <stdexcept>

#include "tools/dump/dump_format.h"
#include "tools/run/run_options_table.h"

namespace crosstrain::run {

namespace {

using nlohmann::json;

const std::map<std::string, OptionType>& type_names() {
  static const std::map<std::string, OptionType> names = {
      {"text", OptionType::Text}, {"path", OptionType::Path},   {"choice", OptionType::Choice},
      {"list", OptionType::List}, {"regex", OptionType::Regex}, {"int", OptionType::Int},
      {"bytes", OptionType::Bytes}, {"bool", OptionType::Bool}, {"key_values", OptionType::KeyValues}};
  return names;
}

bool is_textual(OptionType t) {
  return t == OptionType::Text || t == OptionType::Path || t == OptionType::Choice || t == OptionType::List ||
         t == OptionType::Regex;
}

// A table that does not say what this code reads is a build mistake: found on the first use.
void check_entry(const OptionSpec& s) {
  const std::string where = "options.json: " + s.name + ": ";
  const json& d = s.default_value;
  const bool numeric = s.type == OptionType::Int || s.type == OptionType::Bytes;
  const bool ok = is_textual(s.type) ? d.is_string()
                  : numeric          ? (d.is_null() || d.is_number_integer()) && s.min <= s.max
                  : s.type == OptionType::Bool ? d.is_boolean()
                                               : d.is_object();
  if (!ok) throw std::logic_error(where + "the default does not fit the type");
  if (s.type == OptionType::Choice && s.choices.empty()) throw std::logic_error(where + "a choice without choices");
}

OptionSpec spec_of(const json& e) {
  OptionSpec s;
  s.name = e.at("name").get<std::string>();
  const auto type = type_names().find(e.at("type").get<std::string>());
  if (type == type_names().end()) throw std::logic_error("options.json: " + s.name + ": unknown type");
  s.type = type->second;
  s.default_value = e.value("default", json());
  s.choices = e.value("choices", std::vector<std::string>{});
  s.pattern = e.value("pattern", "");
  s.min = e.value("min", int64_t{0});
  s.max = e.value("max", int64_t{0});
  s.needs = e.value("needs", "");
  s.group = e.value("group", "");
  s.metavar = e.value("metavar", "");
  s.help = e.value("help", "");
  s.hidden = e.value("hidden", false);
  check_entry(s);
  return s;
}

struct Table {
  std::vector<OptionSpec> options;
  std::map<std::string, std::string> groups;
};

const Table& table() {
  static const Table t = [] {
    const json j = json::parse(kRunOptionsTable);
    Table out;
    for (const auto& e : j.at("options")) out.options.push_back(spec_of(e));
    out.groups = j.at("groups").get<std::map<std::string, std::string>>();
    for (const auto& s : out.options) {
      bool known = s.needs.empty();
      for (const auto& other : out.options) known = known || other.name == s.needs;
      if (!known) throw std::logic_error("options.json: " + s.name + " needs an option the table lacks");
    }
    return out;
  }();
  return t;
}

std::string quoted(const std::string& text) { return "'" + text.substr(0, 60) + (text.size() > 60 ? "...'" : "'"); }

std::string shown(const json& value) { return value.is_string() ? quoted(value.get<std::string>()) : value.dump(); }

[[noreturn]] void refuse(const OptionSpec& s, const std::string& why, const json& value) {
  throw std::invalid_argument(s.flag() + " " + why + ", not " + shown(value));
}

void check_number(const OptionSpec& s, const json& v) {
  if (v.is_null() && s.default_value.is_null()) return;
  const bool in_range = v.is_number_integer() && v.get<int64_t>() >= s.min && v.get<int64_t>() <= s.max;
  if (!in_range)
    refuse(s, std::string("must be ") + (s.type == OptionType::Bytes ? "a byte count" : "an integer") + " between " +
                  std::to_string(s.min) + " and " + std::to_string(s.max),
           v);
}

void check_key_values(const OptionSpec& s, const json& v) {
  bool ok = v.is_object();
  if (ok)
    for (const auto& [key, value] : v.items()) ok = ok && !key.empty() && value.is_string();
  if (!ok) refuse(s, "takes KEY=VALUE", v);
}

void check_text(const OptionSpec& s, const json& v) {
  if (!v.is_string()) refuse(s, "takes text", v);
  const std::string text = v.get<std::string>();
  if (text.empty() && s.default_value == "") return;
  if (s.type == OptionType::Choice) {
    for (const auto& c : s.choices)
      if (text == c) return;
    std::string list;
    for (const auto& c : s.choices) list += (list.empty() ? "" : ", ") + c;
    refuse(s, "must be one of " + list, v);
  }
  if (s.type == OptionType::List) {
    try {
      (void)dump::StepSelection::parse(text);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(s.flag() + ": " + e.what());
    }
  }
  // OptionType::Regex: Python's syntax, which only Python's re knows: the agent checks it.
  if (!s.pattern.empty() && !std::regex_match(text, std::regex(s.pattern))) refuse(s, "takes " + s.metavar, v);
}

void check_value(const OptionSpec& s, const json& v) {
  switch (s.type) {
    case OptionType::Bool:
      if (!v.is_boolean()) refuse(s, "is a flag (true or false)", v);
      return;
    case OptionType::Int:
    case OptionType::Bytes:
      return check_number(s, v);
    case OptionType::KeyValues:
      return check_key_values(s, v);
    default:
      return check_text(s, v);
  }
}

}  // namespace

std::string OptionSpec::flag() const {
  std::string f = "--" + name;
  for (auto& c : f)
    if (c == '_') c = '-';
  return f;
}

const std::vector<OptionSpec>& run_options() { return table().options; }

const OptionSpec& run_option(const std::string& name) {
  for (const auto& s : table().options)
    if (s.name == name) return s;
  throw std::logic_error("run has no option '" + name + "' (python/crosstrain/options.json)");
}

std::string option_group_title(const std::string& group) {
  const auto it = table().groups.find(group);
  return it == table().groups.end() ? group : it->second;
}

AgentOptions::AgentOptions() : values_(json::object()) {
  for (const auto& s : run_options()) values_[s.name] = s.default_value;
}

void AgentOptions::set(const std::string& name, json value) { values_[run_option(name).name] = std::move(value); }

const json& AgentOptions::get(const std::string& name) const { return values_.at(run_option(name).name); }

std::string AgentOptions::text(const std::string& name) const { return get(name).get<std::string>(); }

int64_t AgentOptions::integer(const std::string& name) const { return get(name).get<int64_t>(); }

bool AgentOptions::flag(const std::string& name) const { return get(name).get<bool>(); }

bool AgentOptions::is_set(const std::string& name) const {
  const json& v = get(name);
  return !(v.is_null() || v == false || v == "" || (v.is_object() && v.empty()));
}

json parse_option_word(const OptionSpec& s, const std::string& word) {
  if (s.type == OptionType::Int || s.type == OptionType::Bytes) {
    const size_t digits = word.size() - (word.rfind('-', 0) == 0 ? 1 : 0);
    if (digits == 0 || digits > 18 || word.find_first_not_of("0123456789", word.size() - digits) != std::string::npos)
      check_number(s, json(word));  // refused with the range in the message
    return std::stoll(word);
  }
  if (s.type == OptionType::KeyValues) {
    const auto eq = word.find('=');
    if (eq == std::string::npos || eq == 0) refuse(s, "takes KEY=VALUE", json(word));
    json pair = json::object();
    pair[word.substr(0, eq)] = word.substr(eq + 1);
    return pair;
  }
  if (s.type == OptionType::Bool) return word == "true";
  return word;
}

void check(const AgentOptions& options) {
  for (const auto& s : run_options()) check_value(s, options.get(s.name));
  for (const auto& s : run_options())
    if (!s.needs.empty() && options.get(s.name) != s.default_value && !options.is_set(s.needs))
      throw std::invalid_argument(s.flag() + " needs " + run_option(s.needs).flag());
}

}  // namespace crosstrain::run
