#include "tools/train/precision.h"

#include <ATen/Context.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include "core/cpu_features.h"

namespace crosstrain::train {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::FP32;
  if (name == "tf32") return Precision::TF32;
  if (name == "fp16") return Precision::FP16;
  if (name == "bf16") return Precision::BF16;
  throw std::invalid_argument("unknown precision '" + name + "' (valid: fp32, tf32, fp16, bf16)");
}

LossScaleSetting parse_loss_scale(const std::string& text) {
  if (text == "auto") return {LossScaleSetting::Auto, 0};
  if (text == "dynamic") return {LossScaleSetting::Dynamic, 0};
  if (text == "off") return {LossScaleSetting::Off, 0};
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v > 0) || v > 3.0e38)
    throw std::invalid_argument("--loss-scale must be auto, dynamic, off or a positive number, got '" + text + "'");
  return {LossScaleSetting::Static, v};
}

PrecisionPlan plan_precision(const std::string& precision, const std::string& loss_scale,
                             const core::DeviceContext& device) {
  PrecisionPlan p;
  p.precision = parse_precision(precision);
  const auto ls = parse_loss_scale(loss_scale);
  const std::string dev = device.name();
  switch (p.precision) {
    case Precision::FP32: break;
    case Precision::TF32:
      if (!device.is_cuda())
        throw std::invalid_argument("precision tf32 is not supported on " + dev +
                                    " (TF32 is a CUDA tensor-core math mode); use fp32 or bf16");
      p.tf32 = true;
      break;
    case Precision::FP16: p.autocast_dtype = at::kHalf; break;
    case Precision::BF16:
      if (device.is_cuda()) {
        const auto cap = device.info().capability;
        if (!cap.empty() && std::atoi(cap.c_str()) < 8)
          throw std::invalid_argument("precision bf16 is not supported on " + dev + " (compute capability " + cap +
                                      " < 8.0); use fp16");
      }
      p.autocast_dtype = at::kBFloat16;
      break;
  }
  switch (ls.kind) {
    case LossScaleSetting::Auto: p.use_scaler = p.precision == Precision::FP16; break;
    case LossScaleSetting::Dynamic: p.use_scaler = true; break;
    case LossScaleSetting::Off: p.use_scaler = false; break;
    case LossScaleSetting::Static:
      p.use_scaler = true;
      p.static_scale = ls.value;
      break;
  }
  if (device.is_cpu()) {
    const auto cpu = core::read_cpu_features();
    const core::NativeSupport* s = core::native_support(cpu, precision);
    if (!s) {
      p.native_on_cpu = true;  // fp32
    } else if (!s->deciding.empty()) {  // else an architecture whose flags cannot tell: nothing said
      p.native_on_cpu = s->native;
      p.emulation_note = core::emulated_precision_note(cpu, precision);
    }
  }
  return p;
}

void apply_math_mode(const PrecisionPlan& plan, const core::DeviceContext& device) {
  if (!device.is_cuda()) return;
  auto& ctx = at::globalContext();
  ctx.setAllowTF32CuBLAS(plan.tf32);
  ctx.setAllowTF32CuDNN(plan.tf32);
  ctx.setBenchmarkCuDNN(true);
}

std::string default_amp_precision(const core::DeviceContext& device) {
  return device.is_cpu() ? "bf16" : "fp16";
}

double probe_peak_tflops(const PrecisionPlan& plan, const core::DeviceContext& device) {
  const int64_t n = device.is_cpu() ? 1024 : 8192;
  auto opts = at::TensorOptions().device(device.device()).dtype(plan.compute_dtype());
  auto a = at::randn({n, n}, opts), b = at::randn({n, n}, opts);
  at::mm(a, b);
  device.synchronize();
  int iters = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    at::mm(a, b);
    device.synchronize();
    ++iters;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (elapsed < 0.3 && iters < 1000);
  return 2.0 * static_cast<double>(n) * n * n * iters / elapsed / 1e12;
}

}  // namespace crosstrain::train
