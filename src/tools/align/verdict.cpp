#include "tools/align/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace crosstrain::align {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void set(std::string* out, const std::string& text) {
  if (out) *out = text;
}

}  // namespace

std::string verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Pass: return "pass";
    case Verdict::Warn: return "warn";
    case Verdict::Error: return "error";
  }
  return "error";
}

const Thresholds& thresholds_for(DType t) {
  // Half-precision backward passes compound rounding layer after layer: on identical weights a
  // bf16-autocast ResNet-18 step gives gradient cosines down to ~0.90 against float32 (batch-norm
  // parameter gradients, measured with python/dump_torch.py), so the error bars for 16-bit types
  // sit below that, with room for CPUs whose bf16 kernels round differently.
  //                          err_cos err_cos_abs err_abs warn_cos scalar warn/err stat warn/err loss
  static const Thresholds f64{0.9, 0.99, 1e-3, 0.9999999, 1e-9, 1e-6, 1e-9, 1e-5, 1e-2};
  static const Thresholds f32{0.9, 0.99, 1e-3, 0.99999, 1e-5, 1e-3, 1e-4, 1e-2, 1e-2};
  static const Thresholds f16{0.85, 0.95, 5e-3, 0.9999, 1e-3, 1e-2, 1e-3, 5e-2, 5e-2};
  static const Thresholds bf16{0.8, 0.85, 1e-2, 0.999, 1e-2, 5e-2, 1e-2, 1e-1, 5e-2};
  switch (t) {
    case DType::Float64: return f64;
    case DType::Float16: return f16;
    case DType::BFloat16: return bf16;
    default: return f32;
  }
}

DType lower_precision(DType a, DType b) { return dtype_precision_rank(a) <= dtype_precision_rank(b) ? a : b; }

Verdict tensor_verdict(const TensorMetrics& m, DType effective, std::string* reason) {
  if (m.nonfinite_mismatched > 0) {
    set(reason, std::to_string(m.nonfinite_mismatched) + " NaN/Inf on one side only");
    return Verdict::Error;
  }
  if (!dtype_is_float(effective)) {
    if (m.exact()) return Verdict::Pass;
    set(reason, "integer values differ");
    return Verdict::Error;
  }
  const Thresholds& t = thresholds_for(effective);
  if (m.finite_pairs == 1) {
    const double rel = m.max_rel_error;
    if (rel > t.scalar_error_rel) {
      set(reason, "relative error " + fmt("%.3g", rel) + " > " + fmt("%g", t.scalar_error_rel));
      return Verdict::Error;
    }
    if (rel > t.scalar_warn_rel) {
      set(reason, "relative error " + fmt("%.3g", rel) + " > " + fmt("%g", t.scalar_warn_rel));
      return Verdict::Warn;
    }
    return Verdict::Pass;
  }
  if (m.cosine < t.error_cosine) {
    set(reason, "cosine " + fmt("%.6f", m.cosine) + " < " + fmt("%g", t.error_cosine));
    return Verdict::Error;
  }
  if (m.cosine < t.error_cosine_if_abs && m.max_abs_error > t.error_abs) {
    set(reason, "cosine " + fmt("%.6f", m.cosine) + " < " + fmt("%g", t.error_cosine_if_abs) + " and max abs error " +
                    fmt("%.3g", m.max_abs_error) + " > " + fmt("%g", t.error_abs));
    return Verdict::Error;
  }
  if (m.cosine < t.warn_cosine) {
    set(reason, "cosine " + fmt("%.7f", m.cosine) + " < " + fmt("%g", t.warn_cosine));
    return Verdict::Warn;
  }
  return Verdict::Pass;
}

double stat_relative_error(double a, double b, double scale) {
  if (a == b) return 0.0;
  const double denom = std::max({std::fabs(a), std::fabs(scale), 1e-300});
  return std::fabs(a - b) / denom;
}

Verdict stats_verdict(const TensorStats& a, const TensorStats& b, DType effective, double* worst_rel,
                      std::string* reason) {
  if (worst_rel) *worst_rel = 0.0;
  if ((a.nan_count > 0) != (b.nan_count > 0) || (a.inf_count > 0) != (b.inf_count > 0)) {
    set(reason, "NaN/Inf on one side only (A: " + std::to_string(a.nan_count) + " NaN, " + std::to_string(a.inf_count) +
                    " Inf; B: " + std::to_string(b.nan_count) + " NaN, " + std::to_string(b.inf_count) + " Inf)");
    return Verdict::Error;
  }
  if (a.norm.has_value() != b.norm.has_value()) {
    set(reason, "one side has no finite element");
    return Verdict::Error;
  }
  double worst = 0.0;
  if (a.norm) {
    const int64_t finite = std::max<int64_t>(1, a.numel - a.nan_count - a.inf_count);
    const double rms = *a.norm / std::sqrt(static_cast<double>(finite));
    const std::optional<double> pa[] = {a.max, a.min, a.mean, a.norm};
    const std::optional<double> pb[] = {b.max, b.min, b.mean, b.norm};
    for (int i = 0; i < 4; ++i)
      if (pa[i] && pb[i]) worst = std::max(worst, stat_relative_error(*pa[i], *pb[i], i == 3 ? 0.0 : rms));
  }
  if (worst_rel) *worst_rel = worst;
  const bool exact_ints = !dtype_is_float(effective);
  const Thresholds& t = thresholds_for(effective);
  const double err = exact_ints ? 0.0 : t.stat_error_rel, warn = exact_ints ? 0.0 : t.stat_warn_rel;
  if (worst > err) {
    set(reason, "statistics differ by " + fmt("%.3g", worst) + " (relative) > " + fmt("%g", err));
    return Verdict::Error;
  }
  if (worst > warn) {
    set(reason, "statistics differ by " + fmt("%.3g", worst) + " (relative) > " + fmt("%g", warn));
    return Verdict::Warn;
  }
  if (a.nan_count != b.nan_count || a.inf_count != b.inf_count) {
    set(reason, "NaN/Inf counts differ");
    return Verdict::Warn;
  }
  return Verdict::Pass;
}

}  // namespace crosstrain::align
