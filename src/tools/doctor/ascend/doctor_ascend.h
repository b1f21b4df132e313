#pragma once
// `crosstrain doctor --ascend`: the Ascend NPU stack, checked in the order its installation guides
// follow, each finding with a one-line remedy:
//
//   1. CANN toolkit: install path, ASCEND_TOOLKIT_HOME / ASCEND_HOME_PATH, set_env.sh sourced,
//      version (ascend_*_install.info)
//   2. driver and firmware: version.info files, `npu-smi info`
//   3. torch / torch_npu pairing (torch_npu's Requires-Dist names the exact torch)
//   4. torch_npu loadable, and if not, which CANN / driver / torch libraries are missing; whether
//      `import torch` breaks because torch_npu's autoload entry point fails
//   5. Python packages TBE operator compilation imports
//   6. ASCEND_RT_VISIBLE_DEVICES, ASCEND_OPP_PATH, LD_LIBRARY_PATH entries, HCCL_SOCKET_IFNAME
//
// Torch-free: everything it looks at comes in an AscendEnvironment, so tests build fake CANN trees
// and environments. Nothing here needs an NPU; what needs one is said in docs/ASCEND.md.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tools/doctor/check.h"

namespace crosstrain::doctor::ascend {

// Ascend findings are doctor findings (CheckStatus, DoctorCheck of the enclosing namespace).

struct AscendEnvironment {
  std::map<std::string, std::string> env;  // the environment the checks judge (and child processes get)
  std::string root;                        // prefix of the default install paths (/usr/local/Ascend, ...)
  std::string python;                      // asked about torch, torch_npu and TBE packages; "" skips
  std::string torch_npu_dir;               // a torch_npu package directory; "" = ask python where it is
  std::string libtorch_version;            // the libtorch crosstrain runs with ("2.11.0"); "" = unknown
  std::string net_class_dir = "/sys/class/net";  // network interfaces, for HCCL_SOCKET_IFNAME
  bool required = false;  // the run needs the NPU (doctor --ascend): a missing toolkit or torch_npu fails it

  // This process: its environment, "/" as root.
  static AscendEnvironment from_process(const std::string& python, const std::string& libtorch_version);
  std::string get(const std::string& key) const;
};

// Whether anything Ascend is present (an ASCEND_* variable, /usr/local/Ascend, torch_npu for the
// Python): doctor runs the full check then even without --ascend.
bool ascend_detected(const AscendEnvironment& e);

std::vector<DoctorCheck> run_ascend_checks(const AscendEnvironment& e);

// "2.11.0" from "2.11.0+cpu", "2.11.0.post3" -> "2.11.0": what torch / torch_npu pairing compares.
std::string release_of(const std::string& version);

// The exact torch version a torch_npu METADATA file requires ("2.11.0+cpu"), if it names one.
std::optional<std::string> required_torch(const std::string& metadata_text);

}  // namespace crosstrain::doctor::ascend
