// `crosstrain op-check`: the trainer's operators on a device and precision against the CPU in
// float64; exit 0 when every row passes, 1 otherwise.
#include <memory>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "tools/commands/commands.h"

namespace crosstrain::cli {

void add_op_check_command(CLI::App& app) {
  auto args = std::make_shared<commands::OpCheckArgs>();
  auto& o = args->options;
  auto* cmd = app.add_subcommand(
      "op-check",
      "Check every operator the trainer uses (forward and gradients) on a device and precision against "
      "the CPU in float64. Exit 0 when all rows pass, 1 otherwise.");
  cmd->add_option("--device", o.device, "cpu | cuda | cuda:N | <backend>[:N]")->capture_default_str();
  cmd->add_option("--precision", o.precision, "fp32 | tf32 | bf16 | fp16")->capture_default_str()
      ->check(CLI::IsMember({"fp32", "tf32", "bf16", "fp16"}));
  cmd->add_option("--op", o.filter, "Only ops whose name contains FILTER (conv2d, batch_norm, relu, max_pool2d, "
                                    "adaptive_avg_pool2d, linear, cross_entropy, sgd_step, adamw_step, scaler_unscale)")
      ->type_name("FILTER");
  cmd->add_flag("--perf", o.perf, "Also time each case on the target (median)");
  cmd->add_option("--perf-iterations", o.perf_iterations, "Timed repetitions per case with --perf")
      ->capture_default_str()->check(int_range(1, 100000));
  cmd->add_option("--seed", o.seed, "Seed for the random inputs")->capture_default_str()->check(uint_range(0, UINT64_MAX));
  cmd->add_option("--backend-lib", o.backend_libs, "Load an out-of-tree backend library first; repeatable")
      ->type_name("PATH");
  add_json_option(cmd, args->json);
  cmd->callback([args] { exit_with(commands::op_check_command(*args)); });
}

}  // namespace crosstrain::cli
