#pragma once
// One finding of `crosstrain doctor`: what was looked at, what was found, and how to fix it.
// Torch-free: the Ascend checks (doctor/ascend) report in this type without libtorch.
#include <string>

namespace crosstrain::doctor {

enum class CheckStatus { Ok, Info, Warn, Missing };

struct DoctorCheck {
  std::string name;      // "libtorch", "BLAS", "cuda:0", ...
  std::string value;     // what was found
  CheckStatus status = CheckStatus::Ok;
  bool required = false;
  std::string hint;      // how to fix, when status is Warn or Missing
};

}  // namespace crosstrain::doctor
