#include "tools/compare/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tools/compare/noise_model.h"

namespace crosstrain::compare {

using dump::DType;
using dump::TensorStats;
using dump::dtype_is_float;
using dump::dtype_precision_rank;

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

Tolerance record_tolerance(DType effective, bool same_precision) {
  const Thresholds& t = thresholds_for(effective);
  Tolerance tol{t.stat_warn_rel, t.stat_error_rel, false};
  if (!same_precision || !dtype_is_float(effective)) return tol;
  const double eps = machine_epsilon(effective);
  if (kNoiseErrorEps * eps < tol.error) {
    tol.error = kNoiseErrorEps * eps;
    tol.warn = std::min(tol.warn, kNoiseWarnEps * eps);
    tol.by_noise = true;
  }
  return tol;
}

namespace {

std::string scale_words(const NoiseContext& n) {
  return n.input_scale > n.own_rms ? " (relative to its inputs' scale " + fmt("%.3g", n.input_scale) + ")" : " (relative)";
}

// The noise rule: `rel` against a tolerance.
Verdict judge(double rel, const Tolerance& tol, const char* what, const NoiseContext& n, std::string* reason) {
  const auto says = [&](double limit) {
    return std::string(what) + " " + fmt("%.3g", rel) + scale_words(n) + " > " + fmt("%.3g", limit);
  };
  if (rel > tol.error) {
    set(reason, says(tol.error));
    return Verdict::Error;
  }
  if (rel > tol.warn) {
    set(reason, says(tol.warn));
    return Verdict::Warn;
  }
  return Verdict::Pass;
}

double largest_magnitude(const TensorStats& s) {
  return std::max(std::fabs(s.max.value_or(0.0)), std::fabs(s.min.value_or(0.0)));
}

Verdict cosine_rules(const TensorMetrics& m, const Thresholds& t, std::string* reason) {
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

}  // namespace

Verdict tensor_verdict(const TensorMetrics& m, DType effective, std::string* reason) {
  TensorStats none;
  return tensor_verdict(m, none, effective, NoiseContext{}, reason, nullptr);
}

Verdict tensor_verdict(const TensorMetrics& m, const TensorStats& a, DType effective, const NoiseContext& noise,
                       std::string* reason, double* rel_out) {
  if (rel_out) *rel_out = std::nan("");
  if (m.nonfinite_mismatched > 0) {
    set(reason, std::to_string(m.nonfinite_mismatched) + " NaN/Inf on one side only");
    return Verdict::Error;
  }
  if (!dtype_is_float(effective)) {
    if (rel_out) *rel_out = m.exact() ? 0.0 : 1.0;
    if (m.exact()) return Verdict::Pass;
    set(reason, "integer values differ");
    return Verdict::Error;
  }
  const Thresholds& t = thresholds_for(effective);
  const Tolerance tol = record_tolerance(effective, noise.same_precision);
  const double scale = noise.scale();
  // Relative to the noise scale: the RMS of the difference, and its largest element against the
  // largest value (what rounding of the largest value leaves).
  const double rel = m.finite_pairs == 0 ? 0.0
                                         : std::max(m.rmse / std::max(scale, 1e-300),
                                                    m.max_abs_error / std::max({largest_magnitude(a), scale, 1e-300}));
  if (m.finite_pairs == 1) {
    if (tol.by_noise) {
      if (rel_out) *rel_out = rel;
      return judge(rel, tol, "relative error", noise, reason);
    }
    const double srel = noise.input_scale > 0 ? rel : m.max_rel_error;
    if (rel_out) *rel_out = srel;
    return judge(srel, Tolerance{t.scalar_warn_rel, t.scalar_error_rel, false}, "relative error", noise, reason);
  }
  const bool rounding_level = noise.input_scale > 0 && noise.own_rms < tol.error * noise.input_scale;
  if (tol.by_noise || rounding_level) {
    if (rel_out) *rel_out = rel;
    return judge(rel, tol, "difference", noise, reason);
  }
  return cosine_rules(m, t, reason);
}

double stat_relative_error(double a, double b, double scale) {
  if (a == b) return 0.0;
  const double denom = std::max({std::fabs(a), std::fabs(scale), 1e-300});
  return std::fabs(a - b) / denom;
}

Verdict stats_verdict(const TensorStats& a, const TensorStats& b, DType effective, double* worst_rel,
                      std::string* reason) {
  NoiseContext own;
  own.own_rms = record_rms(a);
  return stats_verdict(a, b, effective, own, worst_rel, reason);
}

Verdict stats_verdict(const TensorStats& a, const TensorStats& b, DType effective, const NoiseContext& noise,
                      double* worst_rel, std::string* reason) {
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
    const double scale = std::max(noise.scale(), record_rms(a));
    const double norm_scale = noise.input_scale > 0 ? scale * std::sqrt(static_cast<double>(finite)) : 0.0;
    const std::optional<double> pa[] = {a.max, a.min, a.mean, a.norm};
    const std::optional<double> pb[] = {b.max, b.min, b.mean, b.norm};
    for (int i = 0; i < 4; ++i)
      if (pa[i] && pb[i]) worst = std::max(worst, stat_relative_error(*pa[i], *pb[i], i == 3 ? norm_scale : scale));
  }
  if (worst_rel) *worst_rel = worst;
  if (!dtype_is_float(effective)) {
    if (worst > 0) {
      set(reason, "statistics differ by " + fmt("%.3g", worst) + " (relative) > 0");
      return Verdict::Error;
    }
  } else {
    const Verdict v = judge(worst, record_tolerance(effective, noise.same_precision), "statistics differ by", noise, reason);
    if (v != Verdict::Pass) return v;
  }
  if (a.nan_count != b.nan_count || a.inf_count != b.inf_count) {
    set(reason, "NaN/Inf counts differ");
    return Verdict::Warn;
  }
  return Verdict::Pass;
}

}  // namespace crosstrain::compare
