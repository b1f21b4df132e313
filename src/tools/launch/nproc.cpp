#include "tools/launch/nproc.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace crosstrain::launch {

namespace {

// Files named PREFIX<digits> in `dir` (/dev/nvidia0, ...; not /dev/nvidiactl or /dev/nvidia-uvm).
int count_device_files(const std::string& dir, const std::string& prefix) {
  std::error_code ec;
  int n = 0;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    if (std::all_of(name.begin() + static_cast<long>(prefix.size()), name.end(),
                    [](unsigned char c) { return std::isdigit(c) != 0; }))
      ++n;
  }
  return n;
}

int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

int narrowed(const Environment& env, const char* variable, int physical, bool uuids_allowed) {
  const auto it = env.find(variable);
  return it == env.end() ? physical : visible_count(it->second, physical, uuids_allowed);
}

}  // namespace

int visible_count(const std::string& list, int physical, bool uuids_allowed) {
  int n = 0;
  size_t start = 0;
  while (start <= list.size() && !list.empty()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string entry = list.substr(start, end - start);
    entry.erase(0, entry.find_first_not_of(" \t"));
    entry.erase(entry.find_last_not_of(" \t") + 1);
    const bool uuid = uuids_allowed && (entry.rfind("GPU-", 0) == 0 || entry.rfind("MIG-", 0) == 0);
    const bool index = !entry.empty() && entry.size() <= 6 &&
                       std::all_of(entry.begin(), entry.end(), [](unsigned char c) { return std::isdigit(c) != 0; }) &&
                       std::stoi(entry) < physical;
    if (!uuid && !index) break;
    ++n;
    start = end + 1;
  }
  return std::min(n, physical);
}

NodeDevices visible_devices(const Environment& env, const std::string& dev_dir) {
  NodeDevices d;
  d.cpus = affinity_cpus();
  d.cuda = narrowed(env, "CUDA_VISIBLE_DEVICES", count_device_files(dev_dir, "nvidia"), /*uuids_allowed=*/true);
  d.npu = narrowed(env, "ASCEND_RT_VISIBLE_DEVICES", count_device_files(dev_dir, "davinci"), /*uuids_allowed=*/false);
  return d;
}

namespace {

bool is_count(const std::string& spec) {
  return !spec.empty() && spec.size() <= 4 &&
         std::all_of(spec.begin(), spec.end(), [](unsigned char c) { return std::isdigit(c) != 0; }) &&
         std::stoi(spec) >= 1 && std::stoi(spec) <= kMaxProcPerNode;
}

}  // namespace

bool is_nproc_spec(const std::string& spec) {
  return is_count(spec) || spec == "cpu" || spec == "gpu" || spec == "cuda" || spec == "npu" || spec == "auto";
}

int resolve_nproc_per_node(const std::string& spec, const NodeDevices& devices) {
  const std::string flag = "--nproc-per-node " + spec + ": ";
  if (!is_nproc_spec(spec))
    throw std::invalid_argument(flag + "expected a number of workers from 1 to " + std::to_string(kMaxProcPerNode) +
                                ", or auto, cpu, gpu (cuda) or npu");
  if (is_count(spec)) return std::stoi(spec);
  if (spec == "cpu") return std::min(devices.cpus, kMaxProcPerNode);
  if (spec == "gpu" || spec == "cuda") {
    if (devices.cuda == 0)
      throw std::invalid_argument(flag + "no CUDA GPU is visible on this node (no /dev/nvidiaN, or CUDA_VISIBLE_DEVICES "
                                         "hides them all)");
    return devices.cuda;
  }
  if (spec == "npu") {
    if (devices.npu == 0)
      throw std::invalid_argument(flag + "no Ascend NPU is visible on this node (no /dev/davinciN, or "
                                         "ASCEND_RT_VISIBLE_DEVICES hides them all)");
    return devices.npu;
  }
  return devices.cuda > 0 ? devices.cuda : devices.npu > 0 ? devices.npu : std::min(devices.cpus, kMaxProcPerNode);  // auto
}

}  // namespace crosstrain::launch
