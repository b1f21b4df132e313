// torch / torch_npu: the version pairing, whether libtorch_npu.so's dependencies resolve, whether
// `import torch` survives torch_npu's autoload, and the Python packages TBE needs.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/backend/backend_library.h"
#include "tools/doctor/ascend/ascend_checks.h"
#include "tools/doctor/ascend/ascend_probe.h"

namespace crosstrain::doctor::ascend {

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The package's own files: torch_npu/version.py and the wheel's METADATA beside the package.
struct PackageFacts {
  std::string version;
  std::string required_torch;
};

PackageFacts read_package(const std::string& dir) {
  PackageFacts f;
  static const std::regex version_line(R"(__version__\s*=\s*['"]([^'"]+)['"])");
  std::smatch m;
  const std::string version_py = slurp(fs::path(dir) / "version.py");
  if (std::regex_search(version_py, m, version_line)) f.version = m[1].str();
  std::error_code ec;
  for (auto it = fs::directory_iterator(fs::path(dir).parent_path(), ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("torch_npu-", 0) == 0 && name.size() > 10 && name.substr(name.size() - 10) == ".dist-info") {
      if (auto r = required_torch(slurp(it->path() / "METADATA"))) f.required_torch = *r;
    }
  }
  return f;
}

std::string join(const std::vector<core::MissingLibrary>& libs) {
  std::string s;
  for (const auto& l : libs) s += (s.empty() ? "" : ", ") + l.name;
  return s;
}

void check_library(const AscendEnvironment& e, const std::string& dir, std::vector<DoctorCheck>& out) {
  const std::string lib = dir + "/lib/libtorch_npu.so";
  auto search = core::LibrarySearch::from_environment();
  search.ld_library_path = split_list(e.get("LD_LIBRARY_PATH"), ':');
  const auto d = core::diagnose_library(lib, search);
  if (!d.file_problem.empty()) {
    out.push_back({"torch_npu library", d.file_problem, CheckStatus::Missing, e.required,
                   "reinstall torch-npu (pip install --force-reinstall torch-npu==<version>)"});
    return;
  }
  // Python has loaded torch's own libraries before torch_npu's; they are not the problem here.
  std::vector<core::MissingLibrary> cann, driver, other;
  for (const auto& m : d.missing) {
    if (m.family == core::LibraryFamily::Cann) cann.push_back(m);
    if (m.family == core::LibraryFamily::AscendDriver) driver.push_back(m);
    if (m.family == core::LibraryFamily::Other) other.push_back(m);
  }
  if (cann.empty() && driver.empty() && other.empty()) {
    out.push_back({"torch_npu library", lib + ": every library it needs is found", CheckStatus::Ok, e.required, ""});
    return;
  }
  std::string value = "not loadable, missing";
  std::string hint;
  if (!cann.empty()) {
    value += " CANN: " + join(cann);
    hint = "install the CANN toolkit and source its set_env.sh";
  }
  if (!driver.empty()) {
    value += (cann.empty() ? " driver: " : "; driver: ") + join(driver);
    hint += (hint.empty() ? "" : "; ") + std::string("install the NPU driver, add /usr/local/Ascend/driver/lib64/driver to LD_LIBRARY_PATH");
  }
  if (!other.empty()) {
    value += (cann.empty() && driver.empty() ? " " : "; other: ") + join(other);
    hint += (hint.empty() ? "" : "; ") + std::string("install what provides the other libraries");
  }
  out.push_back({"torch_npu library", value, CheckStatus::Missing, e.required, hint});
}

}  // namespace

void check_torch_npu(const AscendEnvironment& e, std::vector<DoctorCheck>& out) {
  PythonProbe probe;
  if (!e.python.empty()) {
    probe = probe_python(e.python, e.env);
    if (!probe.ran) out.push_back({"Python for torch_npu", probe.error, CheckStatus::Warn, false, "pass --python PATH"});
  }
  const std::string dir = !e.torch_npu_dir.empty() ? e.torch_npu_dir : probe.torch_npu_dir;
  const std::string torch = probe.torch_version.value_or("");
  if (dir.empty()) {
    const std::string want = release_of(!torch.empty() ? torch : e.libtorch_version);
    out.push_back({"torch_npu", e.python.empty() ? "not looked for (no Python)" : "not installed for " + e.python,
                   CheckStatus::Missing, e.required, "pip install torch-npu==" + (want.empty() ? "<torch version>" : want)});
  } else {
    PackageFacts facts = read_package(dir);
    if (probe.torch_npu_version && e.torch_npu_dir.empty()) facts.version = *probe.torch_npu_version;
    out.push_back({"torch_npu", (facts.version.empty() ? "unknown version" : facts.version) + " at " + dir,
                   CheckStatus::Ok, e.required, ""});

    // The pairing: torch_npu X.Y.Z[.postN] is built against torch X.Y.Z exactly.
    const std::string npu_release = release_of(facts.version);
    const std::string wanted = facts.required_torch.empty() ? npu_release : facts.required_torch;
    auto pair_row = [&](const std::string& what, const std::string& have) {
      if (have.empty() || npu_release.empty()) return;
      if (release_of(have) != npu_release) {
        out.push_back({what + " / torch_npu", have + " with torch_npu " + facts.version + " (built for torch " + wanted + ")",
                       CheckStatus::Missing, e.required,
                       "install the pair: torch==" + release_of(wanted) + " with torch-npu " + facts.version +
                           ", or torch-npu==" + release_of(have) + " for this torch"});
      } else if (wanted.find("+cpu") != std::string::npos && have.find('+') != std::string::npos &&
                 have.find("+cpu") == std::string::npos) {
        out.push_back({what + " / torch_npu", have + " is not the CPU build torch_npu was built for (" + wanted + ")",
                       CheckStatus::Warn, false,
                       "importing torch_npu stops when this torch sees a CUDA device (\"Two accelerators cannot be used "
                       "at the same time\"); on an NPU host install the CPU build: pip install torch==" + wanted + " --index-url https://download.pytorch.org/whl/cpu"});
      } else {
        out.push_back({what + " / torch_npu", have + " pairs with " + facts.version, CheckStatus::Ok, false, ""});
      }
    };
    pair_row("torch (Python)", torch);
    pair_row("libtorch (crosstrain)", e.libtorch_version);
    check_library(e, dir, out);

    if (!e.python.empty() && probe.ran && !probe.torch_npu_dir.empty()) {
      if (e.get("TORCH_DEVICE_BACKEND_AUTOLOAD") == "0") {
        out.push_back({"import torch", "not tried: TORCH_DEVICE_BACKEND_AUTOLOAD=0 (torch_npu is not autoloaded)",
                       CheckStatus::Info, false, ""});
      } else {
        const std::string err = import_torch_error(e.python, e.env);
        out.push_back({"import torch", err.empty() ? "works (torch_npu autoloaded)" : "fails: " + err,
                       err.empty() ? CheckStatus::Ok : CheckStatus::Missing, e.required,
                       err.empty() ? "" : "torch_npu's torch.backends entry point makes every `import torch` load it: "
                                          "fix the torch_npu findings, or set TORCH_DEVICE_BACKEND_AUTOLOAD=0 to use torch "
                                          "without the NPU"});
      }
    }
  }

  if (probe.ran) {
    std::string missing, packages;
    for (const auto& module : probe.missing_modules) {
      missing += (missing.empty() ? "" : ", ") + module;
      for (const auto& [mod, pkg] : tbe_python_packages())
        if (mod == module) packages += " " + pkg;
    }
    out.push_back({"TBE Python packages", missing.empty() ? "all importable" : "missing: " + missing,
                   missing.empty() ? CheckStatus::Ok : CheckStatus::Warn, false,
                   missing.empty() ? "" : "operator compilation imports them: " + e.python + " -m pip install" + packages});
  }
}

}  // namespace crosstrain::doctor::ascend
