// Multi-tensor optimizer step vs torch::optim's per-parameter loop, on ResNet-50's parameters.
// usage: build/bench/optim_bench [steps] [device] [rounds]
// Prints ms per step for each implementation and the ratio against torch::optim, per optimizer.
// The implementations take turns for `rounds` rounds and each keeps its best round, so a busy
// machine slows all of them alike instead of whichever happened to run at the wrong moment.
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

struct Candidate {
  std::string name;
  std::function<void()> step;
  double best_ms = 1e30;
};

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::stoi(argv[1]) : 20;
  auto dev = core::DeviceContext::open(argc > 2 ? argv[2] : "cpu");
  const int rounds = argc > 3 ? std::stoi(argv[3]) : 3;
  std::printf("ResNet-50 parameters (161 tensors, 25.6 M values) on %s, %d steps x %d rounds\n", dev.name().c_str(),
              steps, rounds);
  std::printf("%-8s %-22s %10s %8s\n", "optim", "implementation", "ms/step", "speedup");
  for (auto kind : {core::OptimizerKind::SGD, core::OptimizerKind::AdamW}) {
    const bool sgd = kind == core::OptimizerKind::SGD;
    const char* name = sgd ? "sgd" : "adamw";
    std::vector<std::vector<at::Tensor>> keep;
    std::vector<std::shared_ptr<void>> owners;
    std::vector<Candidate> cands;
    keep.push_back(params_with_grads(dev));
    std::shared_ptr<torch::optim::Optimizer> ref;
    if (sgd)
      ref = std::make_shared<torch::optim::SGD>(keep.back(), torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-4));
    else
      ref = std::make_shared<torch::optim::AdamW>(keep.back(), torch::optim::AdamWOptions(1e-3).weight_decay(1e-2));
    cands.push_back({"torch::optim (loop)", [ref] { ref->step(); }});
    for (auto kernels : {core::OptimizerKernels::ForEach, core::OptimizerKernels::Fused}) {
      keep.push_back(params_with_grads(dev));
      core::OptimizerOptions o;
      o.lr = sgd ? 0.1 : 1e-3;
      o.kernels = kernels;
      try {
        auto opt = std::make_shared<core::MultiTensorOptimizer>(
            kind, std::vector<core::ParamGroup>{{keep.back(), sgd ? 1e-4 : 1e-2}}, o);
        cands.push_back({kernels == core::OptimizerKernels::Fused ? "crosstrain fused" : "crosstrain foreach",
                         [opt] { opt->step(); }});
      } catch (const std::exception&) {
        std::printf("%-8s %-22s %10s\n", name, kernels == core::OptimizerKernels::Fused ? "fused" : "foreach", "n/a");
      }
    }
    for (int r = 0; r < rounds; ++r)
      for (auto& c : cands) c.best_ms = std::min(c.best_ms, time_steps(steps, dev, c.step));
    for (const auto& c : cands)
      std::printf("%-8s %-22s %10.2f %7.2fx\n", name, c.name.c_str(), c.best_ms, cands.front().best_ms / c.best_ms);
  }
  return 0;
}
