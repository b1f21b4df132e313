#pragma once
// From `--precision` and `--loss-scale` to what the loop does: which autocast dtype, whether a
// loss scaler runs (and with which scale), and which math mode (TF32) is on. Unsupported
// combinations are rejected here with std::invalid_argument, before any work starts. On the CPU
// the plan also says whether the compute dtype is native there (core/cpu_features.h) and, when it
// is emulated, the one-line note every command prints before it runs.
#include <ATen/ATen.h>

#include <optional>
#include <string>

#include "core/device.h"

namespace crosstrain::train {

enum class Precision { FP32, TF32, FP16, BF16 };

Precision parse_precision(const std::string& name);  // fp32 | tf32 | fp16 | bf16
// "auto" | "dynamic" | "off" | a positive number (static scale). Returns the static scale if any.
struct LossScaleSetting {
  enum Kind { Auto, Dynamic, Off, Static } kind;
  double value;
};
LossScaleSetting parse_loss_scale(const std::string& text);

struct PrecisionPlan {
  Precision precision;
  std::optional<at::ScalarType> autocast_dtype;  // nullopt: plain fp32
  bool tf32 = false;
  bool use_scaler = false;
  std::optional<double> static_scale;
  // CPU plans: whether this CPU computes the dtype natively (fp32 always); nullopt on other devices
  // and where the CPU's flags cannot tell.
  std::optional<bool> native_on_cpu;
  std::string emulation_note;  // non-empty when native_on_cpu is false
  at::ScalarType compute_dtype() const { return autocast_dtype.value_or(at::kFloat); }
};

PrecisionPlan plan_precision(const std::string& precision, const std::string& loss_scale,
                             const core::DeviceContext& device);
// TF32 on or off for CUDA matmul/cuDNN (fp32 runs turn it off so "fp32" means fp32).
void apply_math_mode(const PrecisionPlan& plan, const core::DeviceContext& device);
// The device's default mixed precision: fp16 on CUDA and accelerators, bf16 on CPU.
std::string default_amp_precision(const core::DeviceContext& device);
// Measured matmul TFLOP/s in the plan's compute dtype (a short probe, ~0.5 s).
double probe_peak_tflops(const PrecisionPlan& plan, const core::DeviceContext& device);

}  // namespace crosstrain::train
