#pragma once
// The rules a CompareResult was judged by, said once for every renderer: the regime (same
// precision: the noise rule; cross precision: the table of the lower precision) and, per effective
// dtype met, the limits (verdict.h, docs/COMPARE.md).
#include <nlohmann/json.hpp>
#include <string>

#include "tools/compare/dump_compare.h"

namespace crosstrain::compare {

// One or two lines for the terminal, starting "thresholds: ".
std::string thresholds_text(const CompareResult& r);
// {"regime", "why", "noise_warn_eps", "noise_error_eps", "records_with_input_scale",
//  "by_dtype": {dtype: {"rule", "warn", "error", "cosine_warn", "cosine_error"}}}
nlohmann::json thresholds_json(const CompareResult& r);

}  // namespace crosstrain::compare
