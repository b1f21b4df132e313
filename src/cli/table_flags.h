#pragma once
// Flags made from `crosstrain run`'s option table (tools/run/run_options.h): run has every option,
// align's command form the few that set both sides' agents. Each flag's name, help, default and
// value syntax come from the table; nothing here names an option.
//
//   TableFlags t;
//   t.add(cmd, group, run::run_option("step_marker"));
//   ... parse ...
//   t.take(request.options);   // each option given, as its JSON value
#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "tools/run/run_options.h"
#include "tools/run/runner.h"

namespace crosstrain::cli {

class TableFlags {
 public:
  // --name (and --no-name for a switch on by default) in `group`; a hidden option has no group.
  CLI::Option* add(CLI::App* cmd, CLI::App* group, const run::OptionSpec& spec);
  // Every option added and given on the command line, set in `options` (checked later, by run::check).
  void take(run::AgentOptions& options) const;
  bool given(const std::string& name) const;

 private:
  // A string each: CLI11 2.1 ends a vector option at '--', and would read the command's flags as
  // run's. An option given more than once (--meta) is joined with '\n'. std::map: CLI11 keeps
  // pointers into it.
  std::map<std::string, std::string> word_;
  std::map<std::string, bool> switches_;
  std::map<std::string, CLI::Option*> options_;
};

// What the runner needs of this executable: its path and the agent's folder (CROSSTRAIN_AGENT_DIR,
// else found beside the executable).
run::RunOptions agent_run_options();

}  // namespace crosstrain::cli
