#include "cli/command.h"

#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "report/output.h"

namespace crosstrain::cli {

CLI::Option* add_json_option(CLI::App* cmd, std::string& path) {
  return cmd->add_option("--json", path, "Write the report as JSON to PATH ('-' for stdout)")->type_name("PATH");
}

void exit_with(int status) {
  if (status != 0) throw ExitStatus{status};
}

namespace {
// libtorch's errors carry a C++ backtrace after the message; users need the message. The engine
// strips it where it catches c10::Error (tools/commands/torch_errors.h); this catches any that
// arrive another way, in either of libtorch's two layouts.
std::string error_text(const std::exception& e) {
  std::string msg = e.what();
  for (const char* backtrace : {"Exception raised from", "\nframe #"}) {
    auto cut = msg.find(backtrace);
    if (cut != std::string::npos) msg.erase(cut);
  }
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return msg;
}

std::vector<const CLI::App*> commands_of(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

std::string command_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : commands_of(app)) names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

bool is_command(const CLI::App& app, const std::string& word) {
  for (const CLI::App* sub : commands_of(app))
    if (sub->check_name(word)) return true;
  return false;
}

// The first word that is not a flag names the command (the top-level flags take no values). CLI11
// alone would answer an unknown one with "A subcommand is required", which does not name it.
bool check_command_word(const CLI::App& app, int argc, char** argv) {
  bool any_flag = false;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (!word.empty() && word[0] == '-') {
      any_flag = true;
      continue;
    }
    if (is_command(app, word)) return true;
    std::cerr << "crosstrain: error: unknown command '" << word << "' (valid: " << command_names(app) << ")\n";
    return false;
  }
  if (any_flag) return true;  // --help, --version, or a flag CLI11 reports
  std::cerr << "crosstrain: error: a command is required (valid: " << command_names(app) << "; see --help)\n";
  return false;
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
  if (!check_command_word(app, argc, argv)) return 2;
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
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
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
