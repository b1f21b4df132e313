// crosstrain: carry a PyTorch training job to another accelerator and see how well it runs there.
// The same main() is the torch-free front (`crosstrain`) and the engine (`crosstrain-engine`);
// they differ only in what tools/commands/commands.h's functions do (see src/cli/CMakeLists.txt).
#include "cli/command.h"
#include "report/envelope.h"

int main(int argc, char** argv) {
  crosstrain::report::set_command_line(argc, argv);
  CLI::App app{"crosstrain: train, benchmark, profile, align and migrate PyTorch training across devices"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");
  app.set_version_flag("--version", crosstrain::report::crosstrain_version());
  // In the order of the workflow: run, right, fast; then the data tools.
  crosstrain::cli::add_doctor_command(app);
  crosstrain::cli::add_models_command(app);
  crosstrain::cli::add_train_command(app);
  crosstrain::cli::add_launch_command(app);
  crosstrain::cli::add_run_command(app);
  crosstrain::cli::add_bench_command(app);
  crosstrain::cli::add_migrate_command(app);
  crosstrain::cli::add_align_command(app);
  crosstrain::cli::add_op_check_command(app);
  crosstrain::cli::add_comm_bench_command(app);
  crosstrain::cli::add_compare_command(app);
  crosstrain::cli::add_analyze_command(app);
  crosstrain::cli::add_data_bench_command(app);
  crosstrain::cli::add_make_imagefolder_command(app);
  return crosstrain::cli::run_cli(app, argc, argv);
}
