// Multi-tensor optimizer step vs torch::optim's per-parameter loop, on ResNet-50's parameters.
// usage: build/bench/optim_bench [steps] [device]
// Prints ms per step for each implementation and the ratio against torch::optim, per optimizer.
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "core/device.h"
#include "core/models.h"
#include "core/optim.h"

using namespace crosstrain;

namespace {

double time_steps(int steps, const core::DeviceContext& dev, const std::function<void()>& step) {
  step();  // state allocation happens on the first step
  dev.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  dev.synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps;
}

std::vector<at::Tensor> params_with_grads(const core::DeviceContext& dev) {
  auto model = core::create_model("resnet50", {});
  model->to(dev.device());
  std::vector<at::Tensor> ps;
  for (auto& p : model->parameters()) {
    auto t = p.detach().clone().set_requires_grad(true);
    t.mutable_grad() = at::randn_like(t) * 1e-3;
    ps.push_back(t);
  }
  return ps;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::stoi(argv[1]) : 20;
  auto dev = core::DeviceContext::open(argc > 2 ? argv[2] : "cpu");
  std::printf("ResNet-50 parameters (161 tensors, 25.6 M values) on %s, %d steps each\n", dev.name().c_str(), steps);
  std::printf("%-8s %-22s %10s %8s\n", "optim", "implementation", "ms/step", "speedup");
  for (auto kind : {core::OptimizerKind::SGD, core::OptimizerKind::AdamW}) {
    const char* name = kind == core::OptimizerKind::SGD ? "sgd" : "adamw";
    auto ref_params = params_with_grads(dev);
    std::unique_ptr<torch::optim::Optimizer> ref;
    if (kind == core::OptimizerKind::SGD)
      ref = std::make_unique<torch::optim::SGD>(ref_params, torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-4));
    else
      ref = std::make_unique<torch::optim::AdamW>(ref_params, torch::optim::AdamWOptions(1e-3).weight_decay(1e-2));
    const double base = time_steps(steps, dev, [&] { ref->step(); });
    std::printf("%-8s %-22s %10.2f %7.2fx\n", name, "torch::optim (loop)", base, 1.0);
    for (auto kernels : {core::OptimizerKernels::ForEach, core::OptimizerKernels::Fused}) {
      auto ps = params_with_grads(dev);
      core::OptimizerOptions o;
      o.lr = kind == core::OptimizerKind::SGD ? 0.1 : 1e-3;
      o.kernels = kernels;
      std::unique_ptr<core::MultiTensorOptimizer> opt;
      try {
        opt = std::make_unique<core::MultiTensorOptimizer>(
            kind, std::vector<core::ParamGroup>{{ps, kind == core::OptimizerKind::SGD ? 1e-4 : 1e-2}}, o);
      } catch (const std::exception& e) {
        std::printf("%-8s %-22s %10s\n", name, kernels == core::OptimizerKernels::Fused ? "fused" : "foreach", "n/a");
        continue;
      }
      const double t = time_steps(steps, dev, [&] { opt->step(); });
      std::printf("%-8s %-22s %10.2f %7.2fx\n", name,
                  kernels == core::OptimizerKernels::Fused ? "crosstrain fused" : "crosstrain foreach", t, base / t);
    }
  }
  return 0;
}
