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
//
// Every relative error divides by the record's noise scale (noise_model.h): its own RMS, or its
// inputs' scale where that is larger, so a tensor at rounding level of its inputs is judged by its
// absolute difference against its inputs' size. When both runs compute in the same precision on
// the same kind of device, cosine rules give way to the noise rule: an error beyond
// kNoiseErrorEps machine epsilons of the effective dtype (relative to the noise scale), a warning
// beyond kNoiseWarnEps, never looser than the table (docs/COMPARE.md gives the numbers).
#include <string>

#include "tools/compare/tensor_metrics.h"
#include "tools/dump/dump_format.h"

namespace crosstrain::compare {

using dump::DType;
using dump::TensorStats;

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

// Same precision: where the noise rule errs and warns, in machine epsilons of the effective dtype.
// Two honest float32 runs of a small GPT step with 1 and 2 threads differ by up to 2.5 eps; a
// planted 1e-3 is 8,400 eps, and 1,000 eps after an operator that scales its input by 1/8.
inline constexpr double kNoiseWarnEps = 32;
inline constexpr double kNoiseErrorEps = 512;

// What a record is judged against.
struct NoiseContext {
  double own_rms = 0;           // side A's RMS
  double input_scale = 0;       // its inputs' scale; 0 when unknown
  bool same_precision = false;  // both runs compute in one precision on one kind of device
  double scale() const { return own_rms > input_scale ? own_rms : input_scale; }
};

// Relative errors (to the noise scale) beyond which a record warns and errs: the noise rule's
// under same precision, the table's statistics rule otherwise.
struct Tolerance {
  double warn = 0, error = 0;
  bool by_noise = false;  // the noise rule (eps-based) decides
};
Tolerance record_tolerance(DType effective, bool same_precision);

// `rel`, when given, receives the relative error the verdict was taken on (NaN for cosine rules).
Verdict tensor_verdict(const TensorMetrics& m, DType effective, std::string* reason = nullptr);
Verdict tensor_verdict(const TensorMetrics& m, const TensorStats& a, DType effective, const NoiseContext& noise,
                       std::string* reason, double* rel);

// Relative error of one statistic: |a - b| / max(|a|, scale), where scale (the tensor's noise
// scale) keeps near-zero means and minima from blowing the ratio up.
double stat_relative_error(double a, double b, double scale);
// Largest relative error over max/min/mean/norm (the norm's scale is sqrt(numel) times the noise
// scale); NaN/Inf presence on one side only is an error.
Verdict stats_verdict(const TensorStats& a, const TensorStats& b, DType effective, double* worst_rel = nullptr,
                      std::string* reason = nullptr);
Verdict stats_verdict(const TensorStats& a, const TensorStats& b, DType effective, const NoiseContext& noise,
                      double* worst_rel, std::string* reason);

}  // namespace crosstrain::compare
