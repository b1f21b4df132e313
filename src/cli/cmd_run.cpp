// `crosstrain run [OPTIONS] -- COMMAND...`: the user's own training command, unmodified, under
// crosstrain's in-process agent (python/crosstrain/): dumps at module and operator level, seeds,
// the first non-finite tensor. The command's exit status is run's.
#include <map>
#include <memory>

#include "cli/command.h"
#include "cli/table_flags.h"
#include "report/envelope.h"
#include "tools/run/runner.h"

namespace crosstrain::cli {

namespace {

struct RunFlags {
  run::RunRequest request;
  TableFlags table;
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

void run_run(RunFlags& f) {
  const auto after = words_after_separator(report::command_line());
  if (!after || f.request.command.size() != *after)
    throw std::invalid_argument("run: put the whole command after '--' (usage: crosstrain run [OPTIONS] -- COMMAND [ARGS...])");
  f.table.take(f.request.options);  // checked by the table's rules in run_command
  exit_with(run::run_command(f.request, agent_run_options()));
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
    flags->table.add(cmd, group, spec);
  }
  cmd->callback([flags] { run_run(*flags); });
}

}  // namespace crosstrain::cli
