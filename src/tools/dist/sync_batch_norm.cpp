#include "tools/dist/sync_batch_norm.h"

#include <torch/autograd.h>

namespace crosstrain::dist {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Per-channel statistics over (N, H, W) as float64 [C] tensors, summed over all ranks.
at::Tensor all_ranks_sum(Group& g, at::Tensor local, const char* what) {
  auto t = local.to(at::kDouble).contiguous();
  g.all_reduce_sum(t, what);
  return t;
}

class SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, at::Tensor x, at::Tensor weight, at::Tensor bias, at::Tensor running_mean,
                            at::Tensor running_var, double momentum, double eps, int64_t group_address) {
    auto& g = *reinterpret_cast<Group*>(group_address);
    const int64_t c = x.size(1);
    const auto xf = x.to(at::kFloat);
    const std::vector<int64_t> dims{0, 2, 3};
    auto local = at::cat({xf.sum(dims).to(at::kDouble), (xf * xf).sum(dims).to(at::kDouble),
                          at::full({1}, static_cast<double>(x.numel() / c), xf.options().dtype(at::kDouble))});
    const auto stats = all_ranks_sum(g, local, "the SyncBatchNorm statistics");
    const double n = stats[2 * c].item<double>();
    const auto mean = stats.slice(0, 0, c) / n;
    const auto var = (stats.slice(0, c, 2 * c) / n - mean * mean).clamp_min(0);
    const auto invstd = (var + eps).rsqrt();
    if (running_mean.defined()) {
      at::NoGradGuard no_grad;
      running_mean.mul_(1 - momentum).add_(mean.to(running_mean.scalar_type()), momentum);
      running_var.mul_(1 - momentum).add_((var * (n / std::max(n - 1, 1.0))).to(running_var.scalar_type()), momentum);
    }
    const auto mean_f = mean.to(at::kFloat).view({1, c, 1, 1}), invstd_f = invstd.to(at::kFloat).view({1, c, 1, 1});
    const auto xhat = (xf - mean_f) * invstd_f;
    ctx->save_for_backward({xhat, weight, invstd_f});
    ctx->saved_data["n"] = n;
    ctx->saved_data["group"] = group_address;
    return (xhat * weight.to(at::kFloat).view({1, c, 1, 1}) + bias.to(at::kFloat).view({1, c, 1, 1})).to(x.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto& g = *reinterpret_cast<Group*>(ctx->saved_data["group"].toInt());
    const double n = ctx->saved_data["n"].toDouble();
    const auto saved = ctx->get_saved_variables();
    const auto& xhat = saved[0];
    const auto& weight = saved[1];
    const auto& invstd = saved[2];
    const int64_t c = xhat.size(1);
    const std::vector<int64_t> dims{0, 2, 3};
    const auto dy = grads[0].to(at::kFloat);
    const auto sum_dy = dy.sum(dims), sum_dy_xhat = (dy * xhat).sum(dims);
    const auto all = all_ranks_sum(g, at::cat({sum_dy, sum_dy_xhat}), "the SyncBatchNorm gradient sums");
    const auto mean_dy = (all.slice(0, 0, c) / n).to(at::kFloat).view({1, c, 1, 1});
    const auto mean_dy_xhat = (all.slice(0, c, 2 * c) / n).to(at::kFloat).view({1, c, 1, 1});
    const auto dx = (dy - mean_dy - xhat * mean_dy_xhat) * invstd * weight.to(at::kFloat).view({1, c, 1, 1});
    return {dx.to(grads[0].scalar_type()), sum_dy_xhat.to(weight.scalar_type()), sum_dy.to(weight.scalar_type()),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

core::BatchNormFn sync_batch_norm(Group& group) {
  const auto address = reinterpret_cast<int64_t>(&group);
  return [address](torch::nn::BatchNorm2dImpl& bn, const at::Tensor& x) -> at::Tensor {
    const auto& o = bn.options;
    if (!bn.is_training() || !o.affine()) return bn.forward(x);
    double momentum = o.momentum().value_or(0.0);
    if (o.track_running_stats()) {
      bn.num_batches_tracked += 1;
      if (!o.momentum()) momentum = 1.0 / static_cast<double>(bn.num_batches_tracked.item<int64_t>());
    }
    const at::Tensor rm = o.track_running_stats() ? bn.running_mean : at::Tensor();
    const at::Tensor rv = o.track_running_stats() ? bn.running_var : at::Tensor();
    return SyncBatchNormFunction::apply(x, bn.weight, bn.bias, rm, rv, momentum, o.eps(), address);
  };
}

}  // namespace crosstrain::dist
