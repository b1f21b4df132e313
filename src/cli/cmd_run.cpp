// `crosstrain run [OPTIONS] -- COMMAND...`: the user's own training command, unmodified, under
// crosstrain's in-process agent (python/crosstrain/): dumps at module and operator level, seeds,
// the first non-finite tensor. The command's exit status is run's.
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "report/envelope.h"
#include "tools/run/runner.h"

namespace crosstrain::cli {

namespace {

struct RunFlags {
  run::RunRequest request;
  int64_t seed = 0;
  CLI::Option* seed_option = nullptr;
  std::vector<std::string> meta;  // KEY=VALUE
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

void run_run(RunFlags& f) {
  const auto& line = report::command_line();
  size_t sep = line.size();
  for (size_t i = 1; i < line.size(); ++i)
    if (line[i] == "--") {
      sep = i;
      break;
    }
  if (sep == line.size() || f.request.command.size() != line.size() - sep - 1)
    throw std::invalid_argument("run: put the whole command after '--' (usage: crosstrain run [OPTIONS] -- COMMAND [ARGS...])");
  if (f.seed_option->count() > 0) f.request.seed = f.seed;
  for (const auto& kv : f.meta) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--meta takes KEY=VALUE, not '" + kv + "'");
    f.request.meta[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  run::RunOptions options;
  options.self_exe = self_exe();
  const char* dir = std::getenv("CROSSTRAIN_AGENT_DIR");
  options.agent_dir = dir && *dir ? dir : run::find_agent_dir(options.self_exe);
  exit_with(run::run_command(f.request, options));
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  auto& r = flags->request;
  auto* cmd = app.add_subcommand("run", "Run your own training command under crosstrain's agent: dumps at module and "
                                        "operator level, seeds, the first non-finite tensor; no edit to the script");
  cmd->footer(kExamples);
  cmd->add_option("command", r.command, "The command, after '--' (python train.py ..., torchrun ...)")->required();
  auto* dump = cmd->add_option_group("Dumps (docs/DUMP_FORMAT.md)");
  dump->add_option("--dump", r.dump, "Write a dump of the chosen steps into DIR (DIR/rank<N> per rank)")->type_name("DIR");
  dump->add_option("--dump-steps", r.dump_steps, "Steps to dump: list and ranges, '' for every step")->capture_default_str();
  dump->add_option("--dump-level", r.dump_level, "module: module outputs and gradients; op: every aten operator; both")
      ->capture_default_str()->check(CLI::IsMember({"module", "op", "both"}));
  dump->add_option("--dump-mode", r.dump_mode, "stats: statistics per tensor (computed on the device); tensors: also .npy")
      ->capture_default_str()->check(CLI::IsMember({"stats", "tensors"}));
  dump->add_option("--dump-ranks", r.dump_ranks, "Ranks that dump: list and ranges ('' = all)");
  dump->add_option("--dump-filter", r.dump_filter, "Only records whose name matches REGEX")->type_name("REGEX");
  dump->add_option("--dump-max-bytes", r.dump_max_bytes, "Stop dumping (with a note) past this size per process")
      ->capture_default_str()->transform(byte_count(1, uint64_t{1} << 50));
  dump->add_flag("--dump-overwrite", r.dump_overwrite, "Replace a dump already in DIR");
  dump->add_flag("--dump-optimizer-ops", r.dump_optimizer_ops,
                 "Operator level: also record the optimizer's operators (several per parameter)");
  auto* prof = cmd->add_option_group("Profiling (docs/RUN.md)");
  prof->add_option("--profile", r.profile, "Record traces of the chosen steps into DIR/cycle<k>/rank<r>.pt.trace.json "
                                           "(torch.profiler; torch_npu.profiler on Ascend)")->type_name("DIR");
  prof->add_option("--profile-wait", r.profile_wait, "Steps skipped before each cycle")->capture_default_str()
      ->check(int_range(0, 1e9));
  prof->add_option("--profile-warmup", r.profile_warmup, "Steps the profiler warms up on (not written)")
      ->capture_default_str()->check(int_range(0, 1e9));
  prof->add_option("--profile-active", r.profile_active, "Steps recorded per cycle")->capture_default_str()
      ->check(int_range(1, 1e9));
  prof->add_option("--profile-repeat", r.profile_repeat, "Cycles (0: until the run ends)")->capture_default_str()
      ->check(int_range(0, 1e9));
  prof->add_flag("--profile-memory", r.profile_memory, "Record allocations (profile_memory)");
  prof->add_flag("--profile-shapes", r.profile_shapes, "Record operators' input shapes (record_shapes)");
  prof->add_flag("--profile-stack,!--no-profile-stack", r.profile_stack,
                 "Python stacks, which tie operators to your source lines (default: on)");
  prof->add_option("--profiler-level", r.profiler_level, "Ascend: level0 | level1 | level2 | none")
      ->capture_default_str()->check(CLI::IsMember({"level0", "level1", "level2", "none"}));
  prof->add_option("--aic-metrics", r.aic_metrics,
                   "Ascend AI Core metrics: pipe-utilization, arithmetic-utilization, memory, memory-l0, memory-ub, "
                   "resource-conflict-ratio, l2-cache, none");
  prof->add_flag("--l2-cache", r.l2_cache, "Ascend: record L2 cache hits");
  prof->add_flag("--profile-overwrite", r.profile_overwrite, "Replace traces already in DIR");
  cmd->add_option("--meta", flags->meta, "KEY=VALUE into the dump's header (e.g. precision=bf16, which picks compare's thresholds)")
      ->type_name("KEY=VALUE");
  flags->seed_option = cmd->add_option("--seed", flags->seed,
                                       "Seed random, numpy, torch (CPU and devices) and DataLoader workers before the script runs")
                           ->check(int_range(0, 9.0e15));
  cmd->add_flag("--deterministic", r.deterministic,
                "torch.use_deterministic_algorithms(True), cuDNN deterministic, CUBLAS_WORKSPACE_CONFIG");
  cmd->add_option("--step-marker", r.step_marker, "module:function whose return ends a step (loops without a torch optimizer)")
      ->type_name("MODULE:FUNC");
  cmd->add_flag("--stop-on-nonfinite", r.stop_on_nonfinite,
                "Stop at the first tensor holding NaN or Inf and name its operator, module and source line");
  cmd->add_option("--test-perturb", r.test_perturb, "Test aid: disturb one record (RECORD=SCALE)")->group("");
  cmd->callback([flags] { run_run(*flags); });
}

}  // namespace crosstrain::cli
