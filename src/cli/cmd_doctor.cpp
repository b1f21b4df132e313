// `crosstrain doctor`: environment check; exits 1 when a required part is missing.
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "report/output.h"
#include "tools/doctor.h"

namespace crosstrain::cli {

void add_doctor_command(CLI::App& app) {
  struct Args {
    tools::DoctorOptions o;
    std::string json;
  };
  auto args = std::make_shared<Args>();
  args->o.python = CROSSTRAIN_DEFAULT_PYTHON;
  CLI::App* cmd = app.add_subcommand("doctor", "Check libtorch, BLAS, devices and optional parts");
  cmd->add_option("--device", args->o.device, "Device that must work")->capture_default_str();
  cmd->add_option("--backend-lib", args->o.backend_libs, "Out-of-tree backend library to load; repeatable")->type_name("PATH");
  cmd->add_option("--python", args->o.python, "Python with torch/torchvision for reference checks ('' to skip)")
      ->capture_default_str();
  cmd->add_flag("--ascend", args->o.ascend,
                "Check the Ascend stack (CANN, driver, torch_npu, environment); automatic where Ascend is installed");
  add_json_option(cmd, args->json);
  cmd->callback([args] {
    auto report = tools::run_doctor(args->o);
    if (!report::json_to_stdout(args->json)) std::cout << tools::render_doctor(report);
    if (!args->json.empty()) report::write_json(tools::doctor_to_json(report), args->json);
    if (!report.ok()) throw ExitStatus{1};
  });
}

}  // namespace crosstrain::cli
