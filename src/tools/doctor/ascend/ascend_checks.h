#pragma once
// The groups of run_ascend_checks(), one per file: the CANN toolkit and driver (cann_checks.cpp),
// torch / torch_npu (torch_npu_checks.cpp), the environment variables (cann_checks.cpp).
#include <string>
#include <vector>

#include "tools/doctor/ascend/doctor_ascend.h"

namespace crosstrain::doctor::ascend {

void check_toolkit(const AscendEnvironment& e, std::vector<DoctorCheck>& out);
void check_driver(const AscendEnvironment& e, std::vector<DoctorCheck>& out);
void check_torch_npu(const AscendEnvironment& e, std::vector<DoctorCheck>& out);
void check_variables(const AscendEnvironment& e, std::vector<DoctorCheck>& out);

// The toolkit directory the environment points at, or where a default install lies; "" if none.
struct ToolkitLocation {
  std::string dir;
  std::string source;  // "ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH" or "default path"
};
ToolkitLocation locate_toolkit(const AscendEnvironment& e);

// "key=value" / "Key=Value" lines: the value of the first key matching (case-insensitive).
std::string read_key_value(const std::string& file, const std::string& key);

std::vector<std::string> split_list(const std::string& s, char sep);

}  // namespace crosstrain::doctor::ascend
