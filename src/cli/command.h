#pragma once
// How subcommands plug into the `crosstrain` binary, and how failures become exit codes.
//
//   exit 0  success
//   exit 1  the command ran and found a problem (runtime failure, a check that did not pass)
//   exit 2  the caller's mistake: unknown flag, bad value, unsupported combination
//
// Library code throws std::invalid_argument for caller mistakes and std::runtime_error for
// environment failures; run_cli() turns them into a one-line "crosstrain: error: ..." and the exit
// codes above. A command that wants another exit status throws ExitStatus.
//
// These files are compiled once and linked into both binaries: `crosstrain` (no libtorch; the
// commands that need it hand their command line to `crosstrain-engine`) and `crosstrain-engine`.
// So nothing here may include a libtorch header, directly or through a header it includes
// (checked by the cli.TorchFreeIncludes test).
#include <CLI/CLI.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace crosstrain::cli {

struct ExitStatus {
  int code;
};

// Ends the command with `status` (0: normally; otherwise through ExitStatus).
void exit_with(int status);

// Adds one subcommand each; defined in cmd_<name>.cpp.
void add_models_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_doctor_command(CLI::App& app);
void add_analyze_command(CLI::App& app);          // trace analysis (tools/analyze)
void add_compare_command(CLI::App& app);          // dump / loss-curve comparison (tools/compare)
void add_align_command(CLI::App& app);            // two runs, dumped and compared (tools/align)
void add_op_check_command(CLI::App& app);         // operators against a float64 CPU reference (tools/opcheck)
void add_migrate_command(CLI::App& app);          // CUDA -> device-agnostic Python rewriting (tools/migrate)
void add_make_imagefolder_command(CLI::App& app); // dataset tooling (core/data)
void add_data_bench_command(CLI::App& app);
void add_launch_command(CLI::App& app);         // workers with torchrun's environment (tools/launch)
void add_comm_bench_command(CLI::App& app);        // collective bandwidth of a process group (tools/dist)
void add_run_command(CLI::App& app);               // the user's own command under the Python agent (tools/run)

// Parses argv, runs the chosen subcommand's callback, maps exceptions to exit codes. A first word
// that names no command is a usage error that lists the commands.
int run_cli(CLI::App& app, int argc, char** argv);

// Every option of a command, those in its option groups included (CLI11 2.1's get_options() leaves
// out the options of add_option_group()).
std::vector<const CLI::Option*> command_options(const CLI::App& cmd);

// How many words of a recorded command line (argv, argv[0] first) follow its first `--`; nullopt
// when it has none. `run` and `launch` check with it that the words CLI11 took as the command are
// all of those: a positional word before `--` would be taken as part of it.
std::optional<size_t> words_after_separator(const std::vector<std::string>& line);

// `--json PATH` option shared by every reporting command ("-" = stdout).
CLI::Option* add_json_option(CLI::App* cmd, std::string& path);

}  // namespace crosstrain::cli
