#include "cli/command.h"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "report/output.h"
#include "report/terminal.h"

namespace crosstrain::cli {

std::optional<size_t> words_after_separator(const std::vector<std::string>& line) {
  for (size_t i = 1; i < line.size(); ++i)
    if (line[i] == "--") return line.size() - i - 1;
  return std::nullopt;
}

CLI::Option* add_json_option(CLI::App* cmd, std::string& path) {
  return cmd->add_option("--json", path, "Write the report as JSON to PATH ('-' for stdout)")->type_name("PATH");
}

void exit_with(int status) {
  if (status != 0) throw ExitStatus{status};
}

std::vector<const CLI::Option*> command_options(const CLI::App& cmd) {
  std::vector<const CLI::Option*> options = cmd.get_options();
  for (const CLI::App* group : cmd.get_subcommands([](const CLI::App* sub) { return sub->get_name().empty(); })) {
    const auto inner = command_options(*group);
    options.insert(options.end(), inner.begin(), inner.end());
  }
  return options;
}

namespace {
// libtorch's errors carry a C++ backtrace after the message; users need the message. The engine
// strips it where it catches c10::Error (tools/commands/torch_errors.h); this catches any that
// arrive another way, in either of libtorch's two layouts. A message may quote a file's bytes or
// name (a parser's "last read: ..."): its control characters are printed as escapes.
std::string error_text(const std::exception& e) {
  std::string msg = e.what();
  for (const char* backtrace : {"Exception raised from", "\nframe #"}) {
    auto cut = msg.find(backtrace);
    if (cut != std::string::npos) msg.erase(cut);
  }
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return report::terminal_safe(msg);
}

std::vector<const CLI::App*> commands_of(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

std::string command_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : commands_of(app)) names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// Edits (insert, delete, substitute, swap two neighbours) that turn a into b.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The names a mistyped `word` most likely meant: the closest by edit distance (at most 1 edit for
// words of up to 4 letters, 2 up to 8, 3 beyond), else those it begins (--warmup: --warmup-steps)
// or those it extends with a dash (--steps-total: --steps). At most four; none when nothing is near.
std::vector<std::string> similar_names(const std::string& word, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  if (word.size() < 2) return out;  // "-x": too short to resemble anything
  const size_t limit = word.size() <= 4 ? 1 : word.size() <= 8 ? 2 : 3;
  size_t best = limit;
  for (const auto& name : names) {
    const size_t d = edit_distance(word, name);
    if (d > best) continue;
    if (d < best) out.clear();
    best = d;
    out.push_back(name);
  }
  if (out.empty() && word.size() >= 3)
    for (const auto& name : names)
      if (name.rfind(word, 0) == 0 || word.rfind(name + "-", 0) == 0) out.push_back(name);
  if (out.size() > 4) out.clear();  // too many to be a hint
  return out;
}

// "a", "a or b", "a, b or c"
std::string or_list(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
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
    std::vector<std::string> names;
    for (const CLI::App* sub : commands_of(app)) names.push_back(sub->get_name());
    const auto near = similar_names(word, names);
    std::cerr << "crosstrain: error: unknown command '" << word << "'"
              << (near.empty() ? "" : "; did you mean " + or_list(near) + "?") << " (valid: " << command_names(app)
              << ")\n";
    return false;
  }
  if (any_flag) return true;  // --help, --version, or a flag CLI11 reports
  std::cerr << "crosstrain: error: a command is required (valid: " << command_names(app) << "; see --help)\n";
  return false;
}

// The deepest command named on the command line (the app itself when none was); option groups,
// nameless subcommands, are part of their command.
const CLI::App* named_command(const CLI::App& app) {
  const CLI::App* target = &app;
  for (;;) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : target->get_subcommands())
      if (!sub->get_name().empty()) {
        next = sub;
        break;
      }
    if (!next) return target;
    target = next;
  }
}

// A word that is meant as a flag: "-x", "--name", "--name=value"; not "-", "--" or a negative number.
bool looks_like_flag(const std::string& word) {
  if (word.size() < 2 || word[0] != '-' || word == "--") return false;
  return !(std::isdigit(static_cast<unsigned char>(word[1])) || word[1] == '.');
}

// CLI11 says "The following arguments were not expected: bf16 --precision" (in reverse order). This
// names each unknown flag, in the order given, with the command's flags of a similar name: "unknown
// flag --precision; did you mean --precisions?". Left-over words that are no flag are listed as
// unexpected.
std::string unexpected_arguments(const CLI::App& app) {
  const CLI::App* cmd = named_command(app);
  std::vector<std::string> flags;  // the command's visible long flags, without dashes
  for (const CLI::Option* opt : command_options(*cmd))
    if (!opt->get_group().empty())
      for (const auto& name : opt->get_lnames()) flags.push_back(name);
  std::vector<std::string> unknown, strays;
  for (const auto& word : app.remaining(/*recurse=*/true)) (looks_like_flag(word) ? unknown : strays).push_back(word);
  const std::string help = "see crosstrain" + (cmd == &app ? "" : " " + cmd->get_name()) + " --help";
  if (unknown.empty()) {
    std::string words;
    for (const auto& w : strays) words += (words.empty() ? "" : " ") + w;
    return "unexpected argument" + std::string(strays.size() > 1 ? "s" : "") + ": " + words + " (" + help + ")";
  }
  std::string out;
  for (const auto& word : unknown) {
    const std::string flag = word.substr(0, word.find('='));
    auto near = similar_names(flag.substr(flag.find_first_not_of('-')), flags);
    for (auto& n : near) n = "--" + n;
    out += (out.empty() ? "" : "; ") + std::string("unknown flag ") + flag +
           (near.empty() ? "" : "; did you mean " + or_list(near) + "?");
  }
  return out + " (" + help + ")";
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
    std::cout << named_command(app)->help();  // of the deepest command named on the command line
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return 0;
  } catch (const CLI::Success&) {
    return 0;
  } catch (const CLI::ExtrasError&) {
    std::cerr << "crosstrain: error: " << unexpected_arguments(app) << "\n";
    return 2;
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
