#include "cli/command.h"

#include <iostream>
#include <new>

#include "report/output.h"

namespace crosstrain::cli {

CLI::Option* add_json_option(CLI::App* cmd, std::string& path) {
  return cmd->add_option("--json", path, "Write the report as JSON to PATH ('-' for stdout)")->type_name("PATH");
}

namespace {
// libtorch's errors carry a C++ backtrace after the message; users need the message.
std::string error_text(const std::exception& e) {
  std::string msg = e.what();
  auto cut = msg.find("Exception raised from");
  if (cut != std::string::npos) msg.erase(cut);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return msg;
}
}  // namespace

namespace {
// Whatever went to stdout must have arrived: a failed write (a full disk, /dev/full) fails the
// command even when the command itself succeeded.
int with_stdout_checked(int code) {
  std::string why;
  if (report::flush_stdout(&why)) return code;
  std::cerr << "crosstrain: error: " << why << "\n";
  return code == 0 ? 1 : code;
}

int run_parsed(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return 0;
  } catch (const CLI::CallForHelp&) {
    // Help of the deepest subcommand named on the command line.
    const CLI::App* target = &app;
    for (;;) {
      auto subs = target->get_subcommands();
      if (subs.empty()) break;
      target = subs.front();
    }
    std::cout << target->help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::Success&) {
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    if (msg.empty()) msg = e.get_name();
    std::cerr << "crosstrain: error: " << msg << " (see --help)\n";
    return 2;
  } catch (const ExitStatus& s) {
    return s.code;
  } catch (const std::invalid_argument& e) {
    std::cerr << "crosstrain: error: " << error_text(e) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "crosstrain: error: out of host memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "crosstrain: error: " << error_text(e) << "\n";
    return 1;
  }
}
}  // namespace

int run_cli(CLI::App& app, int argc, char** argv) { return with_stdout_checked(run_parsed(app, argc, argv)); }

}  // namespace crosstrain::cli
