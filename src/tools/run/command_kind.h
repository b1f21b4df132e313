#pragma once
// Is a command a Python program the agent can load into? Decided before it starts, from the
// command line alone: an interpreter named python*/pypy*, a script whose #! line names one (torchrun,
// accelerate and other console scripts are such scripts), `env [NAME=VALUE...] CMD`, and
// `crosstrain launch ... -- CMD` looked through to CMD. Anything else may still start Python (a
// shell script that calls it); the agent then loads there too, since it travels in the environment.
#include <string>
#include <vector>

namespace crosstrain::run {

struct CommandKind {
  bool python = false;
  std::string program;   // the executable that runs first, resolved on PATH ("" when not found)
  std::string reason;    // why it is or is not Python, for the one-line note
};

// path_variable: $PATH. self_exe: this crosstrain's executable (so `crosstrain launch` is recognised
// by path too).
CommandKind classify_command(const std::vector<std::string>& command, const std::string& path_variable,
                             const std::string& self_exe);

// True when the file starts with "#!" and its interpreter line names python or pypy.
bool has_python_shebang(const std::string& path);

}  // namespace crosstrain::run
