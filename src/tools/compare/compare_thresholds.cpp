#include "tools/compare/compare_thresholds.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "tools/compare/noise_model.h"

namespace crosstrain::compare {

using dump::DType;
using dump::dtype_is_float;
using dump::dtype_name;
using dump::dtype_precision_rank;

namespace {

std::string g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// The effective dtypes of the compared float records, highest precision first.
std::vector<DType> dtypes_met(const CompareResult& r) {
  std::set<int> ranks;
  std::vector<DType> out;
  for (const auto& t : r.tensors)
    if (t.status == PairStatus::Compared && dtype_is_float(t.effective_dtype) &&
        ranks.insert(-dtype_precision_rank(t.effective_dtype)).second)
      out.push_back(t.effective_dtype);
  std::sort(out.begin(), out.end(), [](DType a, DType b) { return dtype_precision_rank(a) > dtype_precision_rank(b); });
  return out;
}

}  // namespace

std::string thresholds_text(const CompareResult& r) {
  std::string out = "thresholds: ";
  const auto dtypes = dtypes_met(r);
  if (r.regime.same_precision) {
    out += "same precision on both sides: a record errs when it differs by more than " + g(kNoiseErrorEps) +
           " eps of its dtype relative to its noise scale, warns above " + g(kNoiseWarnEps) + " eps";
  } else {
    out += "cross precision (" + r.regime.why + "): the limits of the lower precision";
  }
  std::string limits;
  for (DType t : dtypes) {
    const Tolerance tol = record_tolerance(t, r.regime.same_precision);
    limits += (limits.empty() ? "" : "; ") + dtype_name(t) + " " + g(tol.error) + " / " + g(tol.warn);
    if (!tol.by_noise) limits += " (cosine warn " + g(thresholds_for(t).warn_cosine) + ")";
  }
  if (!limits.empty()) out += " (error / warn: " + limits + ")";
  out += "\n  noise scale: max(the record's RMS, its inputs' scale); inputs known for " +
         std::to_string(r.records_with_input_scale) + " of " + std::to_string(r.counts.pass + r.counts.warn + r.counts.error) +
         " records\n";
  return out;
}

nlohmann::json thresholds_json(const CompareResult& r) {
  nlohmann::json by = nlohmann::json::object();
  for (DType t : dtypes_met(r)) {
    const Tolerance tol = record_tolerance(t, r.regime.same_precision);
    const Thresholds& th = thresholds_for(t);
    by[dtype_name(t)] = {{"rule", tol.by_noise ? "noise" : "table"},
                         {"eps", machine_epsilon(t)},
                         {"warn", tol.warn},
                         {"error", tol.error},
                         {"cosine_warn", th.warn_cosine},
                         {"cosine_error", th.error_cosine}};
  }
  return {{"regime", r.regime.same_precision ? "same_precision" : "cross_precision"},
          {"why", r.regime.why},
          {"noise_warn_eps", kNoiseWarnEps},
          {"noise_error_eps", kNoiseErrorEps},
          {"records_with_input_scale", r.records_with_input_scale},
          {"by_dtype", by}};
}

}  // namespace crosstrain::compare
