// The CANN toolkit, the driver and firmware, and the environment variables the Ascend runtime reads.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include "tools/doctor/ascend/ascend_checks.h"
#include "tools/doctor/ascend/ascend_probe.h"

namespace crosstrain::doctor::ascend {

namespace fs = std::filesystem;

namespace {

bool exists(const std::string& p) {
  std::error_code ec;
  return !p.empty() && fs::exists(p, ec);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string normal(const std::string& p) {
  std::string s = fs::path(p).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// set_env.sh sits beside `latest` (ascend-toolkit/set_env.sh) or in the toolkit itself.
std::string set_env_script(const std::string& toolkit) {
  for (const auto& c : {fs::path(toolkit).parent_path() / "set_env.sh", fs::path(toolkit) / "set_env.sh"})
    if (exists(c.string())) return c.string();
  return "/usr/local/Ascend/ascend-toolkit/set_env.sh";
}

// CANN writes its version into <toolkit>/<arch>-linux/ascend_toolkit_install.info (and one
// ascend_<part>_install.info per part); torch_npu's collect_env reads the same files.
// The toolkit's own file wins over those of its parts (runtime, compiler, ...), which the walk may
// meet first.
std::string cann_version(const std::string& toolkit) {
  std::error_code ec;
  std::string part_version;
  for (auto it = fs::recursive_directory_iterator(toolkit, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() >= 2) it.disable_recursion_pending();
    const std::string name = it->path().filename().string();
    if (name.rfind("ascend_", 0) != 0 || name.size() <= 13 || name.substr(name.size() - 13) != "_install.info") continue;
    const auto v = read_key_value(it->path().string(), "version");
    if (v.empty()) continue;
    if (name == "ascend_toolkit_install.info") return v;
    if (part_version.empty()) part_version = v;
  }
  return part_version;
}

bool in_path_list(const std::string& list, const std::string& dir) {
  for (const auto& entry : split_list(list, ':'))
    if (normal(entry) == normal(dir)) return true;
  return false;
}

}  // namespace

std::vector<std::string> split_list(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    auto end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string read_key_value(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    k.erase(std::remove_if(k.begin(), k.end(), ::isspace), k.end());
    while (!v.empty() && (std::isspace(static_cast<unsigned char>(v.back())) || v.back() == '"')) v.pop_back();
    while (!v.empty() && (std::isspace(static_cast<unsigned char>(v.front())) || v.front() == '"')) v.erase(0, 1);
    if (lower(k) == lower(key)) return v;
  }
  return "";
}

ToolkitLocation locate_toolkit(const AscendEnvironment& e) {
  for (const char* var : {"ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"})
    if (!e.get(var).empty()) return {e.get(var), var};
  std::vector<std::string> defaults = {e.root + "/usr/local/Ascend/ascend-toolkit/latest"};
  if (!e.get("HOME").empty()) defaults.push_back(e.root + e.get("HOME") + "/Ascend/ascend-toolkit/latest");
  for (const auto& d : defaults)
    if (exists(d)) return {d, "default path"};
  return {};
}

void check_toolkit(const AscendEnvironment& e, std::vector<DoctorCheck>& out) {
  const auto loc = locate_toolkit(e);
  if (loc.dir.empty()) {
    out.push_back({"CANN toolkit", "not found (no ASCEND_TOOLKIT_HOME, nothing in /usr/local/Ascend/ascend-toolkit)",
                   CheckStatus::Missing, e.required,
                   "install Ascend's CANN toolkit (Ascend-cann-toolkit_<version>_linux-<arch>.run) and source its set_env.sh"});
    return;
  }
  if (!exists(loc.dir)) {
    out.push_back({"CANN toolkit", loc.source + "=" + loc.dir + " does not exist", CheckStatus::Missing, e.required,
                   "point " + loc.source + " at the toolkit (source its set_env.sh) or reinstall CANN"});
    return;
  }
  const std::string version = cann_version(loc.dir);
  const bool has_runtime = exists(loc.dir + "/lib64/libascendcl.so");
  out.push_back({"CANN toolkit", loc.dir + " (" + loc.source + "), version " + (version.empty() ? "unknown" : version),
                 has_runtime ? CheckStatus::Ok : CheckStatus::Missing, e.required,
                 has_runtime ? "" : "lib64/libascendcl.so is missing: the toolkit is incomplete, reinstall it"});

  const std::string lib64 = loc.dir + "/lib64";
  std::vector<std::string> lacking;
  if (e.get("ASCEND_TOOLKIT_HOME").empty() && e.get("ASCEND_HOME_PATH").empty()) lacking.push_back("ASCEND_TOOLKIT_HOME");
  if (e.get("ASCEND_OPP_PATH").empty()) lacking.push_back("ASCEND_OPP_PATH");
  if (!in_path_list(e.get("LD_LIBRARY_PATH"), lib64)) lacking.push_back("LD_LIBRARY_PATH without " + lib64);
  std::string value = "yes";
  for (size_t i = 0; i < lacking.size(); ++i) value = (i ? value + ", " : "no: ") + lacking[i];
  out.push_back({"CANN set_env.sh sourced", value, lacking.empty() ? CheckStatus::Ok : CheckStatus::Missing, e.required,
                 lacking.empty() ? "" : "source " + set_env_script(loc.dir) + " (in every new shell, or in ~/.bashrc)"});
}

void check_driver(const AscendEnvironment& e, std::vector<DoctorCheck>& out) {
  const std::string driver = e.root + "/usr/local/Ascend/driver";
  const std::string version = read_key_value(driver + "/version.info", "Version");
  if (exists(driver)) {
    out.push_back({"NPU driver", driver + ", version " + (version.empty() ? "unknown" : version),
                   version.empty() ? CheckStatus::Warn : CheckStatus::Ok, false,
                   version.empty() ? "driver/version.info is missing or has no Version=: reinstall the driver" : ""});
  } else {
    out.push_back({"NPU driver", "not found (" + driver + ")", CheckStatus::Missing, e.required,
                   "install the NPU driver and firmware (Ascend-hdk-<chip>-npu-driver / -firmware) as root"});
  }
  const std::string firmware = read_key_value(e.root + "/usr/local/Ascend/firmware/version.info", "Version");
  if (!firmware.empty()) out.push_back({"NPU firmware", firmware, CheckStatus::Info, false, ""});

  auto smi = run_with_env({"npu-smi", "info"}, e.env, 15);
  if (smi.exit_code == -1) {
    out.push_back({"npu-smi info", "npu-smi not on PATH", CheckStatus::Info, false,
                   exists(driver) ? "it ships with the driver: add " + driver + "/tools to PATH" : "installed with the driver"});
  } else if (smi.exit_code != 0) {
    std::string first = smi.out.substr(0, smi.out.find('\n'));
    out.push_back({"npu-smi info", "failed (exit " + std::to_string(smi.exit_code) + "): " + first, CheckStatus::Warn, false,
                   smi.exit_code == 124 ? "npu-smi hung: the driver is wedged, reboot or reload it"
                                        : "the driver does not see the NPUs: check dmesg and reinstall driver and firmware"});
  } else {
    std::string version = "?";
    auto pos = smi.out.find("Version:");
    if (pos != std::string::npos) {
      const auto words = split_list(smi.out.substr(pos + 8, 40), ' ');
      if (!words.empty()) version = words.front();
    }
    out.push_back({"npu-smi info", "works, npu-smi version " + version, CheckStatus::Ok, false, ""});
  }
}

void check_variables(const AscendEnvironment& e, std::vector<DoctorCheck>& out) {
  const std::string visible = e.get("ASCEND_RT_VISIBLE_DEVICES");
  if (visible.empty()) {
    out.push_back({"ASCEND_RT_VISIBLE_DEVICES", "unset (every NPU visible)", CheckStatus::Info, false, ""});
  } else {
    std::set<std::string> ids;
    bool valid = true;
    for (const auto& id : split_list(visible, ','))
      valid = valid && !id.empty() && id.find_first_not_of("0123456789") == std::string::npos && ids.insert(id).second;
    out.push_back({"ASCEND_RT_VISIBLE_DEVICES", visible, valid ? CheckStatus::Ok : CheckStatus::Warn, false,
                   valid ? "" : "expects distinct device ids separated by commas, e.g. 0,1,2,3"});
  }

  const std::string opp = e.get("ASCEND_OPP_PATH");
  if (opp.empty()) {
    out.push_back({"ASCEND_OPP_PATH", "unset", CheckStatus::Missing, e.required,
                   "operators are found through it: source the toolkit's set_env.sh"});
  } else if (!exists(opp)) {
    out.push_back({"ASCEND_OPP_PATH", opp + " does not exist", CheckStatus::Missing, e.required,
                   "point it at <toolkit>/opp (source the toolkit's set_env.sh)"});
  } else {
    const bool builtin = exists(opp + "/built-in");
    out.push_back({"ASCEND_OPP_PATH", opp, builtin ? CheckStatus::Ok : CheckStatus::Warn, false,
                   builtin ? "" : "no built-in/ operator package under it: install CANN's opp (kernels) package"});
  }

  std::vector<std::string> absent;
  const auto entries = split_list(e.get("LD_LIBRARY_PATH"), ':');
  for (const auto& entry : entries)
    if (!exists(entry)) absent.push_back(entry);
  const std::string driver_lib = e.root + "/usr/local/Ascend/driver/lib64/driver";
  const bool driver_missing = exists(driver_lib) && !in_path_list(e.get("LD_LIBRARY_PATH"), driver_lib);
  std::string value = std::to_string(entries.size()) + " entries";
  if (!absent.empty()) {
    value += "; not existing:";
    for (const auto& a : absent) value += " " + a;
  }
  if (driver_missing) value += "; without " + driver_lib;
  const bool fine = absent.empty() && !driver_missing;
  out.push_back({"LD_LIBRARY_PATH", value, fine ? CheckStatus::Ok : CheckStatus::Warn, false,
                 fine ? "" : (driver_missing ? "add " + driver_lib + " (libascend_hal.so) and drop entries that do not exist"
                                             : "drop entries that do not exist (a stale set_env.sh of a removed CANN?)")});

  const std::string ifname = e.get("HCCL_SOCKET_IFNAME");
  if (ifname.empty()) {
    out.push_back({"HCCL_SOCKET_IFNAME", "unset (HCCL picks the interface)", CheckStatus::Info, false,
                   "on hosts with several NICs set it for multi-node runs, e.g. HCCL_SOCKET_IFNAME=eth0"});
    return;
  }
  // "eth0,ib0": prefixes; "=eth0": exact names; "^docker": excluded prefixes (nothing to check).
  std::string spec = ifname;
  const bool exact = !spec.empty() && spec[0] == '=';
  if (!spec.empty() && spec[0] == '^') {
    out.push_back({"HCCL_SOCKET_IFNAME", ifname + " (excludes)", CheckStatus::Info, false, ""});
    return;
  }
  if (exact) spec.erase(0, 1);
  std::vector<std::string> interfaces, unknown;
  std::error_code ec;
  for (auto it = fs::directory_iterator(e.net_class_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    interfaces.push_back(it->path().filename().string());
  for (const auto& want : split_list(spec, ',')) {
    bool match = false;
    for (const auto& have : interfaces) match = match || (exact ? have == want : have.rfind(want, 0) == 0);
    if (!match) unknown.push_back(want);
  }
  std::string known;
  for (const auto& i : interfaces) known += (known.empty() ? "" : ", ") + i;
  out.push_back({"HCCL_SOCKET_IFNAME", ifname + (unknown.empty() ? "" : " (no such interface)"),
                 unknown.empty() ? CheckStatus::Ok : CheckStatus::Warn, false,
                 unknown.empty() ? "" : "name an interface of this host: " + known});
}

}  // namespace crosstrain::doctor::ascend
