#include "cli/table_flags.h"

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cli/flag_checks.h"

namespace crosstrain::cli {

namespace {

std::string joined(const std::vector<std::string>& words, const char* between) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : between) + w;
  return out;
}

std::string type_name(const run::OptionSpec& spec) {
  if (spec.type == run::OptionType::Choice) return joined(spec.choices, "|");
  if (!spec.metavar.empty()) return spec.metavar;
  return spec.type == run::OptionType::Int ? "N" : "VALUE";
}

}  // namespace

CLI::Option* TableFlags::add(CLI::App* cmd, CLI::App* group, const run::OptionSpec& spec) {
  CLI::App* where = spec.hidden ? cmd : group;
  CLI::Option* opt = nullptr;
  if (spec.type == run::OptionType::Bool) {
    const bool on = spec.default_value.get<bool>();
    switches_[spec.name] = on;
    opt = where->add_flag(on ? spec.flag() + ",!--no-" + spec.flag().substr(2) : spec.flag(), switches_[spec.name],
                          spec.help);
  } else {
    opt = where->add_option(spec.flag(), word_[spec.name], spec.help);
    if (spec.type == run::OptionType::KeyValues) opt->multi_option_policy(CLI::MultiOptionPolicy::Join);
    opt->type_name(type_name(spec));
    const auto& d = spec.default_value;
    if (d.is_string() && !d.get<std::string>().empty()) opt->default_str(d.get<std::string>());
    if (d.is_number_integer()) opt->default_str(std::to_string(d.get<int64_t>()));
    if (spec.type == run::OptionType::Bytes)
      opt->transform(byte_count(static_cast<uint64_t>(spec.min), static_cast<uint64_t>(spec.max)).description(""));
  }
  if (spec.hidden) opt->group("");
  options_[spec.name] = opt;
  return opt;
}

bool TableFlags::given(const std::string& name) const {
  const auto it = options_.find(name);
  return it != options_.end() && it->second->count() > 0;
}

void TableFlags::take(run::AgentOptions& options) const {
  for (const auto& [name, opt] : options_) {
    if (opt->count() == 0) continue;
    const run::OptionSpec& spec = run::run_option(name);
    if (spec.type == run::OptionType::Bool) {
      options.set(name, switches_.at(name));
    } else if (spec.type != run::OptionType::KeyValues) {
      options.set(name, run::parse_option_word(spec, word_.at(name)));
    } else {
      nlohmann::json pairs = nlohmann::json::object();
      std::istringstream each(word_.at(name));
      for (std::string word; std::getline(each, word);) pairs.update(run::parse_option_word(spec, word));
      options.set(name, pairs);
    }
  }
}

run::RunOptions agent_run_options() {
  run::RunOptions options;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  options.self_exe = ec ? std::string() : exe.string();
  const char* dir = std::getenv("CROSSTRAIN_AGENT_DIR");
  options.agent_dir = dir && *dir ? dir : run::find_agent_dir(options.self_exe);
  return options;
}

}  // namespace crosstrain::cli
