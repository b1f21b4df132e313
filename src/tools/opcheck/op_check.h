#pragma once
// `crosstrain op-check`: every operator type the trainer runs, checked on a target device and
// precision against the same operator on the CPU in float64, shaped like a backend test harness
// (one row per op, shape and output; filters by op; a perf mode).
//
//   OpCheckOptions o; o.device = "cpu"; o.precision = "bf16";
//   OpCheckResult r = run_op_check(o);       // r.failed == 0 when every row passes
//
// Each case draws fresh random inputs in float64 from the seed, rounds them to the dtype under
// test, and runs twice: on the target in that dtype, and on the CPU in float64 from the *rounded*
// inputs, so the error measured is the operator's, not the inputs'. Backward rows use autograd
// with a random output gradient. Ops the trainer always runs in float32 (cross-entropy on float32
// logits, the optimizer updates, the loss scaler's unscale) are checked in float32 whatever the
// precision. Tolerances per dtype are in docs/OP_CHECK.md and op_check_tolerance().
// An operator that throws on the target becomes a failed row with the message; nothing aborts.
#include <ATen/ATen.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/opcheck/op_check_options.h"

namespace crosstrain::opcheck {

struct OpCheckRow {
  std::string op;        // "conv2d", "batch_norm", ...
  std::string shape;     // the case's input shapes, e.g. "x[2,16,16,16] w[32,16,3,3] s1 p1"
  std::string output;    // "forward", "grad_input", "grad_weight", "grad_bias", "update", ...
  std::string dtype;     // dtype computed in on the target
  double max_abs = 0;    // max |target - reference|
  double max_rel = 0;    // max_abs / max |reference|: error relative to the tensor's scale
  double cosine = 1;
  double tolerance = 0;  // on max_rel
  bool pass = false;
  std::optional<double> ms;  // --perf: median time of the whole case on the target
  std::string error;     // why the case could not run
};

struct OpCheckResult {
  std::string device;    // resolved, e.g. "cpu"
  std::string precision;
  std::string emulation_note;  // the precision is emulated on this CPU (tools/train/precision.h); else empty
  std::vector<OpCheckRow> rows;
  int64_t passed = 0, failed = 0;
  bool all_pass() const { return failed == 0 && !rows.empty(); }
};

// Op names in run order: conv2d, batch_norm, relu, max_pool2d, adaptive_avg_pool2d, linear,
// cross_entropy, sgd_step, adamw_step, scaler_unscale.
std::vector<std::string> op_check_names();

// Tolerance on max_rel for a dtype: float32 1e-5, float32 with TF32 5e-3, float16 1e-3, bfloat16 1e-2,
// float64 1e-12; 0 (exact) for integer and bool results.
double op_check_tolerance(at::ScalarType dtype, bool tf32 = false);

// The error of `target` against `reference`, both float64 on the CPU with the same shape: max abs,
// max rel (max abs over the reference's largest finite magnitude) and cosine, over the positions
// where both are finite. A position holding the same non-finite value on both sides (inf, -inf,
// NaN) agrees; a non-finite value on one side only makes max abs and max rel infinite.
struct ErrorMetrics {
  double max_abs = 0;
  double max_rel = 0;
  double cosine = 1;
};
ErrorMetrics measure_error(const at::Tensor& target, const at::Tensor& reference);

// std::invalid_argument for an unknown precision or a filter that matches no op. `messages` hears
// the emulation note, before the first case runs.
OpCheckResult run_op_check(const OpCheckOptions& options, std::ostream* messages = nullptr);

// Renderers (op_check_report.cpp).
std::string render_op_check_console(const OpCheckResult& r);
nlohmann::json op_check_to_json(const OpCheckResult& r);  // with schema_version

}  // namespace crosstrain::opcheck
