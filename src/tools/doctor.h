#pragma once
// `crosstrain doctor`: what this machine and build can do, and what is missing. Each finding has a
// status; a missing *required* part makes the report fail (exit 1 at the CLI).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace crosstrain::tools {

enum class CheckStatus { Ok, Info, Warn, Missing };

struct DoctorCheck {
  std::string name;      // "libtorch", "BLAS", "cuda:0", ...
  std::string value;     // what was found
  CheckStatus status = CheckStatus::Ok;
  bool required = false;
  std::string hint;      // how to fix, when status is Warn or Missing
};

struct DoctorReport {
  std::vector<DoctorCheck> checks;
  bool ok() const;       // no required check is Missing
};

struct DoctorOptions {
  std::string device = "auto";          // the device a run would use; it must work
  std::vector<std::string> backend_libs;
  std::string python;                   // interpreter for the optional Python references
  bool ascend = false;                  // check the Ascend stack (also done when one is detected)
};

DoctorReport run_doctor(const DoctorOptions& options);
std::string render_doctor(const DoctorReport& report);
nlohmann::json doctor_to_json(const DoctorReport& report);

}  // namespace crosstrain::tools
