// `crosstrain align`: the same training on two setups (device, precision, threads, layout), both
// dumped, then compared: does B compute what A computes, and if not, where do they first part?
// The work is commands::run_align (tools/commands/align_run.h); this file holds the flags.
#include <memory>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "cli/dump_flags.h"
#include "cli/train_flags.h"
#include "tools/commands/commands.h"

namespace crosstrain::cli {

void add_align_command(CLI::App& app) {
  auto args = std::make_shared<commands::AlignArgs>();
  auto& f = args->options;
  auto& c = f.base;
  namespace lim = tools::limits;
  c.steps = 3;
  c.warmup_steps = 0;
  f.dump.mode = "tensors";
  auto* cmd = app.add_subcommand(
      "align",
      "Train the same model twice (same seed, weights and batches) on two setups, dump both and compare "
      "them: the verdict and the first divergence. Exit 0 when the runs agree, 1 when they differ.");
  cmd->add_option("--a", f.a, "Reference setup, e.g. \"device=cpu precision=fp32\" (keys: device, precision, "
                              "threads, channels_last, backend_lib, loss_scale, nproc, accumulate_steps)")->required();
  cmd->add_option("--b", f.b, "Candidate setup, e.g. \"device=cpu precision=bf16\", or \"nproc=2\": B trains as 2 "
                              "data-parallel processes and A accumulates 2 micro-batches to see the same samples")
      ->required();
  cmd->add_option("--out", f.out, "Directory for the dumps (default: a new align-<time> directory here)")
      ->type_name("DIR");
  add_json_option(cmd, args->json);
  cmd->add_option("--html", args->html, "Write the comparison as a self-contained HTML page")->type_name("PATH");
  cmd->add_flag("--strict", f.strict, "Warnings make the runs differ");
  const char* model = "Model";
  cmd->add_option("--model", c.model, "resnet18 | resnet34 | resnet50 | resnet101 | resnet152")->capture_default_str()->group(model);
  cmd->add_option("--weights", c.weights_in, "Initial state dict for both sides (default: from --seed)")
      ->type_name("PATH")->group(model);
  const char* run = "Run";
  cmd->add_option("--batch-size", c.batch_size, "Images per step")->capture_default_str()->check(int_range(1, lim::kMaxBatchSize))->group(run);
  cmd->add_option("--image-size", c.image_size, "Square input size in pixels")->capture_default_str()
      ->check(int_range(lim::kMinImageSize, lim::kMaxImageSize))->group(run);
  cmd->add_option("--steps", c.steps, "Training steps per side (all loss-logged)")->capture_default_str()
      ->check(int_range(1, lim::kMaxSteps))->group(run);
  add_common_train_flags(cmd, c);
  add_dump_flags(cmd, f.dump, /*with_dir=*/false);
  cmd->callback([args] { exit_with(commands::align_command(*args)); });
}

}  // namespace crosstrain::cli
