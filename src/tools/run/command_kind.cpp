#include "tools/run/command_kind.h"

#include <fstream>
#include <regex>
#include <sstream>

#include "tools/launch/launcher.h"

namespace crosstrain::run {

namespace {

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_interpreter_name(const std::string& name) {
  static const std::regex python(R"((python|pypy)[0-9.]*(-dbg)?)");
  return std::regex_match(name, python);
}

bool is_assignment(const std::string& word) {
  static const std::regex assignment(R"([A-Za-z_][A-Za-z0-9_]*=.*)");
  return std::regex_match(word, assignment);
}

bool is_crosstrain(const std::string& resolved, const std::string& word, const std::string& self_exe) {
  return basename_of(word) == "crosstrain" || (!self_exe.empty() && resolved == self_exe);
}

}  // namespace

bool has_python_shebang(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  if (!in || !std::getline(in, line) || line.size() < 2 || line.compare(0, 2, "#!") != 0) return false;
  // `#!/usr/bin/python3`, `#!/usr/bin/env python3`, `#!/usr/bin/env -S python3 -u`: the interpreter is
  // the first word, or for env the first word that is neither an option nor an assignment.
  std::istringstream words(line.substr(2, 256));
  std::string word;
  if (!(words >> word)) return false;
  if (basename_of(word) == "env")
    while (words >> word && (word[0] == '-' || is_assignment(word))) {
    }
  return is_interpreter_name(basename_of(word));
}

CommandKind classify_command(const std::vector<std::string>& command, const std::string& path_variable,
                             const std::string& self_exe) {
  CommandKind k;
  size_t i = 0;
  // `env [-i] [NAME=VALUE...] CMD`: the program is CMD.
  if (!command.empty() && basename_of(command[0]) == "env") {
    ++i;
    while (i < command.size() && (is_assignment(command[i]) || (command[i].size() > 1 && command[i][0] == '-'))) ++i;
  }
  if (i >= command.size()) {
    k.reason = "no program in the command";
    return k;
  }
  const std::string& word = command[i];
  k.program = launch::find_program(word, path_variable);
  if (k.program.empty()) {
    k.reason = "'" + word + "' is " + (word.find('/') != std::string::npos ? "not an executable file" : "not on PATH");
    return k;
  }
  if (is_crosstrain(k.program, word, self_exe)) {
    // `crosstrain launch [...] -- CMD`: look at CMD; any other crosstrain command is C++.
    for (size_t j = i + 1; j < command.size(); ++j)
      if (command[j] == "--") {
        std::vector<std::string> inner(command.begin() + static_cast<long>(j) + 1, command.end());
        CommandKind sub = classify_command(inner, path_variable, self_exe);
        sub.program = k.program;
        return sub;
      }
    k.reason = "a crosstrain command runs in C++, not Python";
    return k;
  }
  if (is_interpreter_name(basename_of(k.program)) || is_interpreter_name(basename_of(word))) {
    k.python = true;
    k.reason = "a Python interpreter";
    return k;
  }
  if (has_python_shebang(k.program)) {
    k.python = true;
    k.reason = "a Python script (#! line)";
    return k;
  }
  k.reason = "'" + word + "' is neither a Python interpreter nor a Python script";
  return k;
}

}  // namespace crosstrain::run
