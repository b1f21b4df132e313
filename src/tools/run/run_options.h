#pragma once
// The options of `crosstrain run`, read from python/crosstrain/options.json: the table the Python
// agent reads too, embedded into this library when the build is configured. The CLI's flags, their
// help and defaults, the checks the front makes before the command starts and the JSON handed to the
// agent are all made from it; nothing here names an option but the few the runner itself acts on
// (dump, profile, their overwrite flags, the profile schedule, seed, deterministic).
//
//   AgentOptions o;                        // every option at its default
//   o.set("dump", "d");  o.set("dump_level", "both");
//   check(o);                              // std::invalid_argument naming the flag
//   o.text("dump_level");  o.to_json();    // {"dump": "d", "dump_level": "both", ...}: every option
//
// Each type's check is written once here and once in python/crosstrain/_options.py; a regular
// expression option (type "regex") is checked by the agent alone, with Python's re, before the
// script's first line (one line and exit 2). tests/cli/run_options_test.cpp tries valid and invalid
// values of every option on both sides.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace crosstrain::run {

enum class OptionType { Text, Path, Choice, List, Regex, Int, Bytes, Bool, KeyValues };

struct OptionSpec {
  std::string name;     // start()'s keyword and the JSON key: dump_steps
  OptionType type = OptionType::Text;
  nlohmann::json default_value;
  std::vector<std::string> choices;  // Choice
  std::string pattern;               // Text: the whole value matches (ASCII; same in ECMAScript and Python)
  int64_t min = 0, max = 0;          // Int, Bytes
  std::string needs;                 // an option that must be set for this one to leave its default
  std::string group, metavar, help;
  bool hidden = false;

  std::string flag() const;  // --dump-steps
};

// The table, in its order; every entry checked when it is first read (std::logic_error otherwise).
const std::vector<OptionSpec>& run_options();
const OptionSpec& run_option(const std::string& name);  // std::logic_error for a name not in the table
// Title of a group ("dump" -> "Dumps (docs/DUMP_FORMAT.md)").
std::string option_group_title(const std::string& group);

// One value per option of the table, each at its default until set.
class AgentOptions {
 public:
  AgentOptions();
  void set(const std::string& name, nlohmann::json value);  // std::logic_error for an unknown name
  const nlohmann::json& get(const std::string& name) const;
  std::string text(const std::string& name) const;  // a Text, Path, Choice, List or Regex option
  int64_t integer(const std::string& name) const;   // an Int or Bytes option that is set
  bool flag(const std::string& name) const;
  bool is_set(const std::string& name) const;  // not null, not "", not false, not {}
  // The hand-off: every option, by name, as python/crosstrain/_config.py reads it.
  nlohmann::json to_json() const { return values_; }

 private:
  nlohmann::json values_;
};

// The CLI's word for an option as its JSON value (a number for Int and Bytes, which arrive here as
// plain digits: units are the CLI's to read); std::invalid_argument naming the flag when it is none.
nlohmann::json parse_option_word(const OptionSpec& spec, const std::string& word);

// Every check the front makes: each value by its type, then `needs`; std::invalid_argument naming
// the first flag at fault.
void check(const AgentOptions& options);

}  // namespace crosstrain::run
