// `crosstrain doctor`: environment check; exits 1 when a required part is missing. --distributed
// checks a job's network and rendezvous instead, from every worker.
#include <memory>

#include "cli/command.h"
#include "tools/commands/commands.h"

namespace crosstrain::cli {

void add_doctor_command(CLI::App& app) {
  auto args = std::make_shared<commands::DoctorArgs>();
  args->options.python = CROSSTRAIN_DEFAULT_PYTHON;
  CLI::App* cmd = app.add_subcommand("doctor", "Check libtorch, BLAS, devices and optional parts");
  cmd->add_option("--device", args->options.device, "Device that must work")->capture_default_str();
  cmd->add_option("--backend-lib", args->options.backend_libs, "Out-of-tree backend library to load; repeatable")->type_name("PATH");
  cmd->add_option("--python", args->options.python, "Python with torch/torchvision for reference checks ('' to skip)")
      ->capture_default_str();
  cmd->add_flag("--ascend", args->options.ascend,
                "Check the Ascend stack (CANN, driver, torch_npu, environment); automatic where Ascend is installed");
  const char* dp = "Distributed (run by every worker, under torchrun or crosstrain launch; docs/DISTRIBUTED.md)";
  cmd->add_flag("--distributed", args->options.distributed,
                "Check the job's network instead: MASTER_ADDR, routes, interfaces, the rendezvous, an all-reduce, "
                "latency per rank")->group(dp);
  cmd->add_option("--dist-timeout", args->options.dist_timeout_s, "Seconds the rendezvous and each collective may take")
      ->capture_default_str()->check(CLI::Range(0.1, 86400.0))->group(dp);
  cmd->add_option("--dist-backend", args->options.dist_backend, "auto (gloo on the CPU) | gloo | nccl | hccl")
      ->capture_default_str()->group(dp);
  add_json_option(cmd, args->json);
  cmd->callback([args] { exit_with(commands::doctor_command(*args)); });
}

}  // namespace crosstrain::cli
