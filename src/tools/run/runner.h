#pragma once
// Runs the user's command under the agent and says what the agent saw.
//
//   int status = run_command(request, options);   // the command's own exit status
//
// The command inherits the terminal (stdin, stdout, stderr stay its own: progress bars and isatty
// work) and runs in crosstrain's process group, so Ctrl-C reaches it directly; crosstrain ignores
// SIGINT and SIGQUIT while it waits (as time(1) does) and passes SIGTERM and SIGHUP on. A command
// killed by a signal makes crosstrain die of the same signal, so a shell sees the same status.
//
// Before it starts: the dump and profile folders are made, checked for writing and locked
// (output_folders.h; a folder that holds a dump needs --dump-overwrite, which removes the dump's
// own files and nothing else) and the program is resolved on PATH (a command that cannot start is
// std::invalid_argument: one line, exit 2). After it ends: one summary
// line per process that trained, from the reports the agent left in a private folder.
#include <functional>
#include <map>
#include <string>

#include "tools/run/run_request.h"

namespace crosstrain::run {

struct RunOptions {
  std::string agent_dir;   // the folder holding the crosstrain package (python/ of the repository)
  std::string self_exe;    // this executable, to recognise `crosstrain launch` in the command
  std::map<std::string, std::string> extra_env;  // set for the command on top of crosstrain's environment
  std::function<void(const std::string&)> note;  // one line each; default: stderr "crosstrain run: ..."
};

int run_command(const RunRequest& request, const RunOptions& options);

// The folder holding the agent's package: <exe dir>/python, <exe dir>/../python (a build folder
// inside the source tree), <exe dir>/../share/crosstrain/python (an install), then the source tree
// this was built from. Empty when none holds it.
std::string find_agent_dir(const std::string& self_exe);

// The agent's compiled statistics (src/agent, built beside this executable; <exe dir>/../lib in an
// install), passed to the command as CROSSTRAIN_AGENT_NATIVE. Empty when it is not there: the agent
// then computes the same statistics in Python.
inline constexpr const char* kAgentNativeLibrary = "libcrosstrain_tensor_stats.so";
std::string find_agent_native(const std::string& self_exe);

}  // namespace crosstrain::run
