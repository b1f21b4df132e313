// `crosstrain bench`: FP32 vs mixed precision on the same model, batch and seed.
#include <memory>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "cli/train_flags.h"
#include "tools/commands/commands.h"

namespace crosstrain::cli {

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<commands::BenchArgs>();
  auto& o = args->options;
  namespace lim = train::limits;
  CLI::App* cmd = app.add_subcommand(
      "bench", "Train the same model once per precision and compare throughput, peak memory and batch time");
  cmd->add_option("--model", o.model, "Model (default: resnet50)");
  cmd->add_option("--batch-size", o.batch_size, "Images per step (default: 8 on CPU, 128 on accelerators)")
      ->check(int_range(1, lim::kMaxBatchSize));
  cmd->add_option("--image-size", o.image_size, "Input size (default: 224)")->check(int_range(lim::kMinImageSize, lim::kMaxImageSize));
  cmd->add_option("--steps", o.steps, "Steps per run (default: 7 on CPU, 40 on accelerators)")->check(int_range(1, lim::kMaxSteps));
  cmd->add_option("--warmup-steps", o.warmup_steps, "Steps excluded from timing (default: 2 on CPU, 5 on accelerators)")
      ->check(int_range(0, lim::kMaxSteps));
  cmd->add_option("--precisions", o.precisions, "Runs in order, e.g. fp32,bf16 (default: fp32 then the device's AMP)")
      ->delimiter(',')->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16"}));
  add_json_option(cmd, args->json)->group("Reporting");
  add_common_train_flags(cmd, o.base);
  cmd->callback([args] { exit_with(commands::bench_command(*args)); });
}

}  // namespace crosstrain::cli
