#pragma once
// Pass / warn / error for one compared tensor, with thresholds chosen by the lower precision of
// the two sides (docs/DUMP_FORMAT.md lists them; the rules start from msprobe's):
//   error  when a NaN/Inf appears on one side only, or cosine < error_cosine, or (cosine <
//          error_cosine_if_abs and max abs error > error_abs): "this layer is broken"
//          (float32: 0.9 / 0.99 / 1e-3 as msprobe; looser for 16-bit types);
//   warn   when cosine < warn_cosine: agreement worse than that precision's rounding explains;
//   pass   otherwise.
// Single-element tensors (loss, loss scale) use the relative error instead of the cosine, and
// stats-only comparisons use the relative error of max/min/mean/norm. Integer and bool tensors
// must match exactly.
#include <string>

#include "tools/align/dump_format.h"
#include "tools/align/tensor_metrics.h"

namespace crosstrain::align {

enum class Verdict { Pass, Warn, Error };
std::string verdict_name(Verdict v);  // "pass", "warn", "error"

struct Thresholds {
  double error_cosine = 0.9;          // error below this cosine, whatever the magnitude
  double error_cosine_if_abs = 0.99;  // error below this cosine ...
  double error_abs = 1e-3;            // ... when the max abs error is also above this
  double warn_cosine;                 // warn below this cosine
  double scalar_warn_rel, scalar_error_rel;  // single-element tensors
  double stat_warn_rel, stat_error_rel;      // stats-only comparison
  double loss_rtol;                          // loss curves: tolerated relative difference per step
};

// Thresholds for a comparison whose lower-precision side computes in `t`.
const Thresholds& thresholds_for(DType t);

// The lower-precision of two dtypes (by dtype_precision_rank).
DType lower_precision(DType a, DType b);

Verdict tensor_verdict(const TensorMetrics& m, DType effective, std::string* reason = nullptr);

// Relative error of one statistic: |a - b| / max(|a|, scale), where scale (the tensor's RMS) keeps
// near-zero means and minima from blowing the ratio up.
double stat_relative_error(double a, double b, double scale);
// Largest relative error over max/min/mean/norm; NaN/Inf presence on one side only is an error.
Verdict stats_verdict(const TensorStats& a, const TensorStats& b, DType effective, double* worst_rel = nullptr,
                      std::string* reason = nullptr);

}  // namespace crosstrain::align
