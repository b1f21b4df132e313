// `crosstrain op-check`: the trainer's operators on a device and precision against the CPU in
// float64, or (--from-dump) every operator an operator-level tensors dump recorded, replayed from
// its inputs; exit 0 when every row passes, 1 otherwise.
#include <memory>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "cli/output_inputs.h"
#include "tools/commands/commands.h"

namespace crosstrain::cli {

void add_op_check_command(CLI::App& app) {
  auto args = std::make_shared<commands::OpCheckArgs>();
  auto& o = args->options;
  auto* cmd = app.add_subcommand(
      "op-check",
      "Check every operator the trainer uses (forward and gradients) on a device and precision against "
      "the CPU in float64, or with --from-dump every operator a training run recorded (crosstrain run "
      "--dump-level op --dump-mode tensors), replayed from its inputs. Exit 0 when all rows pass, 1 otherwise.");
  cmd->add_option("--device", o.device, "cpu | cuda | cuda:N | <backend>[:N]")->capture_default_str();
  auto* precision = cmd->add_option("--precision", o.precision,
                                    "fp32 | tf32 | bf16 | fp16 (--from-dump: default the dtypes the run had)")
                        ->capture_default_str()
                        ->check(CLI::IsMember({"fp32", "tf32", "bf16", "fp16"}));
  cmd->add_option("--op", o.filter, "Only ops whose name contains FILTER (conv2d, batch_norm, relu, max_pool2d, "
                                    "adaptive_avg_pool2d, linear, cross_entropy, sgd_step, adamw_step, scaler_unscale; "
                                    "--from-dump: the aten operator or record name, e.g. aten::mm, gelu, blocks.1)")
      ->type_name("FILTER");
  cmd->add_option("--from-dump", o.from_dump,
                  "Replay every operator of this operator-level tensors dump instead of the built-in cases")
      ->type_name("DIR");
  cmd->add_option("--top", o.top, "--from-dump: the N worst operator calls shown on the console (0 = all)")
      ->capture_default_str()->check(int_range(0, 100000000));
  cmd->add_flag("--perf", o.perf, "Also time each case on the target (median)");
  cmd->add_option("--perf-iterations", o.perf_iterations, "Timed repetitions per case with --perf")
      ->capture_default_str()->check(int_range(1, 100000));
  cmd->add_option("--seed", o.seed, "Seed for the random inputs")->capture_default_str()->check(uint_range(0, UINT64_MAX));
  cmd->add_option("--backend-lib", o.backend_libs, "Load an out-of-tree backend library first; repeatable")
      ->type_name("PATH");
  add_json_option(cmd, args->json);
  cmd->callback([args, precision] {
    args->options.precision_given = precision->count() > 0;
    refuse_outputs_over_inputs(op_check_paths(*args));
    exit_with(commands::op_check_command(*args));
  });
}

}  // namespace crosstrain::cli
