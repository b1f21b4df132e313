#include "tools/doctor/ascend/ascend_probe.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace crosstrain::doctor::ascend {

CommandOutput run_with_env(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                           int timeout_s) {
  CommandOutput result;
  if (argv.empty()) return result;
  // coreutils `timeout` bounds a hung tool (npu-smi on a wedged driver); it searches PATH itself,
  // using the PATH of the environment we hand it.
  std::vector<std::string> args = {"timeout", std::to_string(timeout_s)};
  args.insert(args.end(), argv.begin(), argv.end());
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  if (!env.count("PATH")) env_strings.push_back("PATH=/usr/local/bin:/usr/bin:/bin");
  std::vector<char*> cenv;
  for (auto& e : env_strings) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  int fds[2];
  if (pipe(fds) != 0) return result;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  // The PATH lookup for `timeout` itself uses this process's PATH.
  const int rc = posix_spawnp(&pid, "timeout", &actions, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return result;
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) result.out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  // timeout exits 127 when the program is not found, 126 when it cannot run.
  if (result.exit_code == 127 || result.exit_code == 126) result.exit_code = -1;
  return result;
}

const std::vector<std::pair<std::string, std::string>>& tbe_python_packages() {
  static const std::vector<std::pair<std::string, std::string>> packages = {
      {"decorator", "decorator"}, {"attr", "attrs"},         {"psutil", "psutil"},   {"numpy", "numpy"},
      {"sympy", "sympy"},         {"cloudpickle", "cloudpickle"}, {"scipy", "scipy"}, {"tornado", "tornado"},
      {"absl", "absl-py"},        {"ml_dtypes", "ml-dtypes"}, {"yaml", "pyyaml"}};
  return packages;
}

namespace {

// Package metadata only: importlib.metadata and find_spec do not run torch or torch_npu.
std::string probe_script() {
  std::string modules = "[";
  for (const auto& [module, package] : tbe_python_packages()) modules += "'" + module + "',";
  modules += "]";
  return "import json, os, platform, importlib.util as u, importlib.metadata as m\n"
         "def ver(n):\n"
         "  try: return m.version(n)\n"
         "  except Exception: return None\n"
         "def req(n):\n"
         "  try: return m.requires(n) or []\n"
         "  except Exception: return []\n"
         "def torch_version():\n"  // torch/version.py holds the local tag (+cpu, +cu130) that metadata drops
         "  try:\n"
         "    t = u.find_spec('torch')\n"
         "    for line in open(os.path.join(os.path.dirname(t.origin), 'version.py')):\n"
         "      if line.startswith('__version__'): return line.split('=', 1)[1].strip().strip(\"'\\\"\")\n"
         "  except Exception: pass\n"
         "  return ver('torch')\n"
         "s = None\n"
         "try: s = u.find_spec('torch_npu')\n"
         "except Exception: pass\n"
         "d = os.path.dirname(s.origin) if s and s.origin else ''\n"
         "miss = []\n"
         "for mod in " + modules + ":\n"
         "  try:\n"
         "    if u.find_spec(mod) is None: miss.append(mod)\n"
         "  except Exception: miss.append(mod)\n"
         "print(json.dumps({'python': platform.python_version(), 'torch': torch_version(), 'torch_npu': ver('torch_npu'),"
         " 'torch_npu_dir': d, 'requires': req('torch_npu'), 'missing': miss}))\n";
}

}  // namespace

PythonProbe probe_python(const std::string& python, const std::map<std::string, std::string>& env) {
  PythonProbe p;
  auto out = run_with_env({python, "-c", probe_script()}, env, 60);
  if (out.exit_code != 0) {
    p.error = out.exit_code == -1 ? python + " cannot be started" : python + " failed: " + out.out.substr(0, 200);
    return p;
  }
  try {
    auto j = nlohmann::json::parse(out.out.substr(out.out.rfind('{')));
    p.ran = true;
    p.python_version = j.value("python", "");
    if (j["torch"].is_string()) p.torch_version = j["torch"].get<std::string>();
    if (j["torch_npu"].is_string()) p.torch_npu_version = j["torch_npu"].get<std::string>();
    p.torch_npu_dir = j.value("torch_npu_dir", "");
    for (const auto& r : j["requires"]) p.torch_npu_requires.push_back(r.get<std::string>());
    for (const auto& mmod : j["missing"]) p.missing_modules.push_back(mmod.get<std::string>());
  } catch (const std::exception& e) {
    p.ran = false;
    p.error = "unreadable answer from " + python;
  }
  return p;
}

std::string import_torch_error(const std::string& python, const std::map<std::string, std::string>& env) {
  auto out = run_with_env({python, "-c", "import torch"}, env, 120);
  if (out.exit_code == 0) return "";
  std::string text = out.out;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

}  // namespace crosstrain::doctor::ascend
