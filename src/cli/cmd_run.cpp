// `crosstrain run [OPTIONS] -- COMMAND...`: the user's own training command, unmodified, under
// crosstrain's in-process agent (python/crosstrain/): dumps at module and operator level, seeds,
// the first non-finite tensor. The command's exit status is run's.
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "report/envelope.h"
#include "tools/run/runner.h"

namespace crosstrain::cli {

namespace {

// The words given for each option of the table, by name (std::map: CLI11 keeps pointers into it).
struct RunFlags {
  run::RunRequest request;
  // A string each: CLI11 2.1 ends a vector option at '--', and would read the command's flags as run's.
  // An option given more than once (--meta) is joined with '\n'.
  std::map<std::string, std::string> word;
  std::map<std::string, bool> switches;
  std::map<std::string, CLI::Option*> given;
};

const char* kExamples = R"(
Examples:
  crosstrain run -- python train.py --lr 0.1                       # steps counted, nothing recorded
  crosstrain run --seed 0 --dump dump_cpu --dump-level both -- python train.py --device cpu
  crosstrain run --seed 0 --dump d --dump-mode tensors --dump-steps 0 -- torchrun --nproc-per-node 2 train.py
  crosstrain run --stop-on-nonfinite -- python train.py --amp
  crosstrain run --seed 0 --dump ops --dump-level op --dump-mode tensors -- python train.py
  crosstrain op-check --from-dump ops --precision bf16              # each recorded operator replayed in C++
  crosstrain run --profile prof -- python train.py                 # steps 2-4 recorded, then:
  crosstrain analyze prof --html prof.html                         # every cycle and rank, your source lines
  crosstrain compare dump_cpu dump_npu                              # the first divergence, by operator

The agent loads into every Python process of the command through PYTHONPATH (a sitecustomize that
runs the environment's own one after it); the script is not edited. A step ends at each optimizer
step (torch.optim, also through GradScaler, LR schedulers, DDP, fused optimizers); --step-marker
names another boundary. Under torchrun or crosstrain launch each rank dumps into DIR/rank<N>.
docs/RUN.md walks through a run; docs/DUMP_FORMAT.md is the format.
)";

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

// Each option given becomes its JSON value; the checks are the table's (run::check, in validate).
void take_options(RunFlags& f) {
  for (const auto& spec : run::run_options()) {
    if (f.given.at(spec.name)->count() == 0) continue;
    if (spec.type == run::OptionType::Bool) {
      f.request.options.set(spec.name, f.switches[spec.name]);
      continue;
    }
    if (spec.type != run::OptionType::KeyValues) {
      f.request.options.set(spec.name, run::parse_option_word(spec, f.word[spec.name]));
      continue;
    }
    nlohmann::json pairs = nlohmann::json::object();
    std::istringstream each(f.word[spec.name]);
    for (std::string word; std::getline(each, word);) pairs.update(run::parse_option_word(spec, word));
    f.request.options.set(spec.name, pairs);
  }
}

void run_run(RunFlags& f) {
  const auto after = words_after_separator(report::command_line());
  if (!after || f.request.command.size() != *after)
    throw std::invalid_argument("run: put the whole command after '--' (usage: crosstrain run [OPTIONS] -- COMMAND [ARGS...])");
  take_options(f);
  run::RunOptions options;
  options.self_exe = self_exe();
  const char* dir = std::getenv("CROSSTRAIN_AGENT_DIR");
  options.agent_dir = dir && *dir ? dir : run::find_agent_dir(options.self_exe);
  exit_with(run::run_command(f.request, options));
}

std::string joined(const std::vector<std::string>& words, const char* between) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : between) + w;
  return out;
}

// One flag of the table: --name (and --no-name for a switch that is on by default).
void add_table_option(CLI::App* cmd, CLI::App* group, const run::OptionSpec& spec, RunFlags& f) {
  CLI::App* where = spec.hidden ? cmd : group;
  CLI::Option* opt = nullptr;
  if (spec.type == run::OptionType::Bool) {
    const bool on = spec.default_value.get<bool>();
    f.switches[spec.name] = on;
    opt = where->add_flag(on ? spec.flag() + ",!--no-" + spec.flag().substr(2) : spec.flag(), f.switches[spec.name],
                          spec.help);
  } else {
    opt = where->add_option(spec.flag(), f.word[spec.name], spec.help);
    if (spec.type == run::OptionType::KeyValues) opt->multi_option_policy(CLI::MultiOptionPolicy::Join);
    opt->type_name(spec.type == run::OptionType::Choice ? joined(spec.choices, "|")
                   : !spec.metavar.empty()              ? spec.metavar
                   : spec.type == run::OptionType::Int  ? "N"
                                                        : "VALUE");
    const auto& d = spec.default_value;
    if (d.is_string() && !d.get<std::string>().empty()) opt->default_str(d.get<std::string>());
    if (d.is_number_integer()) opt->default_str(std::to_string(d.get<int64_t>()));
    if (spec.type == run::OptionType::Bytes)
      opt->transform(byte_count(static_cast<uint64_t>(spec.min), static_cast<uint64_t>(spec.max)).description(""));
  }
  if (spec.hidden) opt->group("");
  f.given[spec.name] = opt;
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  auto* cmd = app.add_subcommand("run", "Run your own training command under crosstrain's agent: dumps at module and "
                                        "operator level, seeds, the first non-finite tensor; no edit to the script");
  cmd->footer(kExamples);
  cmd->add_option("command", flags->request.command, "The command, after '--' (python train.py ..., torchrun ...)")
      ->required();
  std::map<std::string, CLI::App*> groups;
  for (const auto& spec : run::run_options()) {
    auto& group = groups[spec.group];
    if (!group) group = cmd->add_option_group(run::option_group_title(spec.group));
    add_table_option(cmd, group, spec, *flags);
  }
  cmd->callback([flags] { run_run(*flags); });
}

}  // namespace crosstrain::cli
