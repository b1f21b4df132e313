#pragma once
// What doctor --ascend learns from other programs: the Python environment (package metadata only,
// no import of torch_npu: its autoload would need CANN) and `npu-smi info`.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace crosstrain::doctor::ascend {

struct CommandOutput {
  int exit_code = -1;  // -1: could not start; 124: timed out (coreutils timeout)
  std::string out;     // stdout and stderr together
};

// Runs argv[0] found on PATH (from env) with exactly the environment env, for at most timeout_s.
CommandOutput run_with_env(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                           int timeout_s);

struct PythonProbe {
  bool ran = false;
  std::string error;                      // why it did not run
  std::string python_version;             // "3.11.7"
  std::optional<std::string> torch_version;
  std::optional<std::string> torch_npu_version;
  std::string torch_npu_dir;              // the package directory python would import
  std::vector<std::string> torch_npu_requires;
  std::vector<std::string> missing_modules;  // TBE's Python dependencies not importable
};

// The Python packages TBE operator compilation imports (module name -> pip package).
const std::vector<std::pair<std::string, std::string>>& tbe_python_packages();

PythonProbe probe_python(const std::string& python, const std::map<std::string, std::string>& env);

// `import torch` with torch's backend autoload on: "" when it works, else the last line of the error.
std::string import_torch_error(const std::string& python, const std::map<std::string, std::string>& env);

}  // namespace crosstrain::doctor::ascend
