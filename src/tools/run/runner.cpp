#include "tools/run/runner.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "tools/launch/launcher.h"
#include "tools/run/command_kind.h"
#include "tools/run/output_folders.h"
#include "tools/run/run_summary.h"

extern char** environ;

namespace fs = std::filesystem;

namespace crosstrain::run {

namespace {

volatile sig_atomic_t g_child = 0;

void forward_signal(int sig) {
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), sig);
}

// SIGINT/SIGQUIT ignored and SIGTERM/SIGHUP passed on while the command runs; restored after.
class WaitSignals {
 public:
  WaitSignals() {
    struct sigaction ignore {}, forward {};
    ignore.sa_handler = SIG_IGN;
    forward.sa_handler = forward_signal;
    sigemptyset(&ignore.sa_mask);
    sigemptyset(&forward.sa_mask);
    forward.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &ignore, &old_[0]);
    ::sigaction(SIGQUIT, &ignore, &old_[1]);
    ::sigaction(SIGTERM, &forward, &old_[2]);
    ::sigaction(SIGHUP, &forward, &old_[3]);
  }
  ~WaitSignals() {
    ::sigaction(SIGINT, &old_[0], nullptr);
    ::sigaction(SIGQUIT, &old_[1], nullptr);
    ::sigaction(SIGTERM, &old_[2], nullptr);
    ::sigaction(SIGHUP, &old_[3], nullptr);
  }

 private:
  struct sigaction old_[4] {};
};

Environment current_environment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::string make_state_dir() {
  std::string pattern = (fs::temp_directory_path() / "crosstrain-run-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error(std::string("run: cannot create a temporary folder: ") + std::strerror(errno));
  return pattern;
}

// Starts the command and waits for it; returns the raw wait status.
int spawn_and_wait(const std::string& program, const std::vector<std::string>& argv, const Environment& env) {
  std::vector<std::string> block;
  for (const auto& [k, v] : env) block.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : block) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  WaitSignals signals;
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("run: fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s : {SIGINT, SIGQUIT, SIGTERM, SIGHUP}) ::sigaction(s, &dfl, nullptr);
    ::execve(program.c_str(), cargv.data(), cenv.data());
    const std::string msg = "crosstrain run: cannot start " + program + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  g_child = pid;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("run: waitpid failed: ") + std::strerror(errno));
  }
  g_child = 0;
  return status;
}

}  // namespace

std::string find_agent_dir(const std::string& self_exe) {
  std::error_code ec;
  const fs::path exe_dir = fs::path(self_exe).parent_path();
  for (const fs::path& candidate : {exe_dir / "python", exe_dir.parent_path() / "python",
                                    exe_dir.parent_path() / "share" / "crosstrain" / "python",
                                    fs::path(CROSSTRAIN_SOURCE_DIR) / "python"})
    if (fs::is_regular_file(candidate / "crosstrain" / "_boot" / "sitecustomize.py", ec))
      return candidate.string();
  return {};
}

std::string find_agent_native(const std::string& self_exe) {
  std::error_code ec;
  const fs::path exe_dir = fs::path(self_exe).parent_path();
  for (const fs::path& candidate : {exe_dir / kAgentNativeLibrary, exe_dir.parent_path() / "lib" / kAgentNativeLibrary})
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  return {};
}

int run_command(const RunRequest& request, const RunOptions& options) {
  validate(request);
  auto note = options.note ? options.note : [](const std::string& line) { std::cerr << "crosstrain run: " << line << "\n"; };
  Environment base = current_environment();
  for (const auto& [k, v] : options.extra_env) base[k] = v;
  const auto path_it = base.find("PATH");
  const std::string path_variable = path_it != base.end() ? path_it->second : "/usr/bin:/bin";
  const std::string program = launch::find_program(request.command.front(), path_variable);
  if (program.empty())
    throw std::invalid_argument("run: cannot start '" + request.command.front() + "': " +
                                (request.command.front().find('/') != std::string::npos ? "not an executable file"
                                                                                         : "not found on PATH"));
  if (options.agent_dir.empty())
    throw std::runtime_error("run: the agent's Python package (crosstrain/_boot/sitecustomize.py) is not next to "
                             "this executable; rebuild, or set CROSSTRAIN_AGENT_DIR");
  // Checked and locked before the command starts; the locks are held until it ends.
  const AgentOptions& o = request.options;
  const std::string dump = o.text("dump"), profile = o.text("profile");
  const OutputFolder dump_folder = claim_output_folder(dump, "--dump");
  const OutputFolder profile_folder = profile == dump ? OutputFolder{} : claim_output_folder(profile, "--profile");
  if (!dump.empty()) prepare_dump_dir(dump, o.flag("dump_overwrite"));
  if (!profile.empty()) prepare_profile_dir(profile, o.flag("profile_overwrite"));
  const CommandKind kind = classify_command(request.command, path_variable, options.self_exe);
  if (!kind.python) note(kind.reason + ": it runs without the agent unless it starts Python itself");

  const std::string state_dir = make_state_dir();
  RunRequest agent_request = request;
  // The script may chdir.
  if (!dump.empty()) agent_request.options.set("dump", fs::absolute(dump).string());
  if (!profile.empty()) agent_request.options.set("profile", fs::absolute(profile).string());
  Environment env =
      agent_environment(agent_request, base, (fs::path(options.agent_dir) / "crosstrain" / "_boot").string(), state_dir);
  const std::string native = find_agent_native(options.self_exe);
  if (!native.empty() && !env.count("CROSSTRAIN_AGENT_NATIVE")) env["CROSSTRAIN_AGENT_NATIVE"] = native;
  int status = 0;
  try {
    status = spawn_and_wait(program, request.command, env);
  } catch (...) {
    fs::remove_all(state_dir);
    throw;
  }
  const auto reports = read_reports(state_dir);
  if (kind.python || !reports.empty())  // a command already said to be no Python needs no second word
  {
    const ProfileSchedule schedule{static_cast<int>(o.integer("profile_wait")), static_cast<int>(o.integer("profile_warmup")),
                                   static_cast<int>(o.integer("profile_active")), static_cast<int>(o.integer("profile_repeat"))};
    for (const auto& line : summary_lines(reports, kind.python, profile.empty() ? nullptr : &schedule,
                                          WIFSIGNALED(status) ? WTERMSIG(status) : 0, !dump.empty()))
      note(line);
  }
  std::error_code ec;
  fs::remove_all(state_dir, ec);
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    std::cout.flush();
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return 128 + sig;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace crosstrain::run
