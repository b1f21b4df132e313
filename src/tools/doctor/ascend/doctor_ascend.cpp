#include "tools/doctor/ascend/doctor_ascend.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "tools/doctor/ascend/ascend_checks.h"

extern char** environ;

namespace crosstrain::doctor::ascend {

namespace fs = std::filesystem;

AscendEnvironment AscendEnvironment::from_process(const std::string& python, const std::string& libtorch_version) {
  AscendEnvironment e;
  for (char** p = environ; p && *p; ++p) {
    std::string kv = *p;
    auto eq = kv.find('=');
    if (eq != std::string::npos) e.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  e.python = python;
  e.libtorch_version = libtorch_version;
  return e;
}

std::string AscendEnvironment::get(const std::string& key) const {
  auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

std::string release_of(const std::string& version) {
  static const std::regex release(R"(^(\d+)\.(\d+)(\.(\d+))?)");
  std::smatch m;
  if (!std::regex_search(version, m, release)) return version;
  return m[1].str() + "." + m[2].str() + "." + (m[4].matched ? m[4].str() : "0");
}

std::optional<std::string> required_torch(const std::string& metadata_text) {
  static const std::regex requires_torch(R"((^|\n)Requires-Dist:\s*torch\s*\(?\s*==\s*([^\s,;)]+))");
  std::smatch m;
  if (std::regex_search(metadata_text, m, requires_torch)) return m[2].str();
  return std::nullopt;
}

bool ascend_detected(const AscendEnvironment& e) {
  for (const auto& [k, v] : e.env)
    if (k.rfind("ASCEND_", 0) == 0 && !v.empty()) return true;
  std::error_code ec;
  if (fs::exists(e.root + "/usr/local/Ascend", ec)) return true;
  return !e.torch_npu_dir.empty();
}

std::vector<DoctorCheck> run_ascend_checks(const AscendEnvironment& e) {
  std::vector<DoctorCheck> checks;
  ascend::check_toolkit(e, checks);
  ascend::check_driver(e, checks);
  ascend::check_torch_npu(e, checks);
  ascend::check_variables(e, checks);
  return checks;
}

}  // namespace crosstrain::doctor::ascend
