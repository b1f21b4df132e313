#include "core/optim.h"

#include <cmath>
#include <stdexcept>

#include "core/compat.h"

namespace crosstrain::core {

OptimizerKind optimizer_kind_from_name(const std::string& name) {
  if (name == "sgd") return OptimizerKind::SGD;
  if (name == "adamw") return OptimizerKind::AdamW;
  throw std::invalid_argument("unknown optimizer '" + name + "' (valid: sgd, adamw)");
}

ScheduleKind schedule_kind_from_name(const std::string& name) {
  if (name == "constant") return ScheduleKind::Constant;
  if (name == "step") return ScheduleKind::Step;
  if (name == "cosine") return ScheduleKind::Cosine;
  throw std::invalid_argument("unknown lr schedule '" + name + "' (valid: constant, step, cosine)");
}

double LrSchedule::lr(int64_t step) const {
  if (warmup_steps > 0 && step < warmup_steps)
    return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  const int64_t t = step - warmup_steps;
  switch (kind) {
    case ScheduleKind::Constant: return base_lr;
    case ScheduleKind::Step: return base_lr * std::pow(gamma, static_cast<double>(t / std::max<int64_t>(1, step_size)));
    case ScheduleKind::Cosine: {
      const double span = static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps));
      const double p = std::min(1.0, static_cast<double>(t) / span);
      return 0.5 * base_lr * (1.0 + std::cos(M_PI * p));
    }
  }
  return base_lr;
}

std::vector<ParamGroup> split_decay_groups(const torch::OrderedDict<std::string, at::Tensor>& named_params,
                                           bool no_decay_bn_bias, double weight_decay) {
  ParamGroup decay{{}, weight_decay}, no_decay{{}, 0.0};
  for (const auto& item : named_params) {
    if (!item.value().requires_grad()) continue;
    if (no_decay_bn_bias && item.value().dim() <= 1)
      no_decay.params.push_back(item.value());
    else
      decay.params.push_back(item.value());
  }
  std::vector<ParamGroup> out;
  if (!decay.params.empty()) out.push_back(std::move(decay));
  if (!no_decay.params.empty()) out.push_back(std::move(no_decay));
  return out;
}

MultiTensorOptimizer::MultiTensorOptimizer(OptimizerKind kind, std::vector<ParamGroup> groups,
                                           OptimizerOptions options)
    : kind_(kind), opt_(options) {
  if (!(opt_.lr >= 0)) throw std::invalid_argument("learning rate must be >= 0");
  if (opt_.nesterov && (opt_.momentum <= 0 || opt_.dampening != 0))
    throw std::invalid_argument("Nesterov momentum requires momentum > 0 and zero dampening");
  c10::DeviceType dt = c10::DeviceType::CPU;
  for (auto& g : groups) {
    if (!g.params.empty()) dt = g.params.front().device().type();
    GroupState state;
    state.group = std::move(g);
    groups_.push_back(std::move(state));
  }
  const char* fused_op = kind_ == OptimizerKind::SGD ? "aten::_fused_sgd_" : "aten::_fused_adamw_";
  const bool have = compat::has_kernel(fused_op, dt);
  switch (opt_.kernels) {
    case OptimizerKernels::Auto: fused_ = have; break;
    case OptimizerKernels::Fused:
      if (!have) throw std::invalid_argument(std::string(fused_op) + " is not registered for this device");
      fused_ = true;
      break;
    case OptimizerKernels::ForEach: fused_ = false; break;
  }
  // SGD without momentum has no fused kernel variant worth using; the foreach path is one op.
  if (kind_ == OptimizerKind::SGD && opt_.momentum == 0) fused_ = false;
}

std::vector<at::Tensor> MultiTensorOptimizer::gradients() const {
  std::vector<at::Tensor> out;
  for (const auto& g : groups_)
    for (const auto& p : g.group.params)
      if (p.grad().defined()) out.push_back(p.grad());
  return out;
}

void MultiTensorOptimizer::zero_grad(bool set_to_none) {
  at::NoGradGuard no_grad;
  for (auto& g : groups_)
    for (auto& p : g.group.params) {
      if (set_to_none) p.mutable_grad().reset();
      else if (p.grad().defined()) p.mutable_grad().zero_();
    }
}

void MultiTensorOptimizer::step() {
  at::NoGradGuard no_grad;
  ++steps_;
  for (auto& g : groups_) {
    std::vector<at::Tensor> params, grads;
    for (const auto& p : g.group.params) {
      if (!p.grad().defined()) continue;
      params.push_back(p);
      grads.push_back(p.grad());
    }
    if (params.empty()) continue;
    const size_t state_size = kind_ == OptimizerKind::SGD ? g.momentum.size() : g.exp_avg.size();
    if (g.initialized && state_size != 0 && params.size() != state_size)
      throw std::runtime_error("optimizer: the set of parameters with gradients changed between steps");
    if (kind_ == OptimizerKind::SGD)
      step_sgd(g, params, grads);
    else
      step_adamw(g, params, grads);
  }
}

void MultiTensorOptimizer::step_sgd(GroupState& g, const std::vector<at::Tensor>& params,
                                    const std::vector<at::Tensor>& grads) {
  const double wd = g.group.weight_decay;
  if (fused_) {
    const bool first = !g.initialized;
    if (first) {
      for (const auto& p : params) g.momentum.push_back(at::empty_like(p));
      g.initialized = true;
    }
    at::_fused_sgd_(params, grads, g.momentum, wd, opt_.momentum, opt_.lr, opt_.dampening, opt_.nesterov,
                    /*maximize=*/false, /*is_first_step=*/first);
    return;
  }
  std::vector<at::Tensor> d = grads;
  if (wd != 0) d = at::_foreach_add(grads, params, wd);
  if (opt_.momentum != 0) {
    if (!g.initialized) {
      for (const auto& t : d) g.momentum.push_back(t.clone().detach());
      g.initialized = true;
    } else {
      at::_foreach_mul_(g.momentum, opt_.momentum);
      at::_foreach_add_(g.momentum, d, 1.0 - opt_.dampening);
    }
    if (opt_.nesterov)
      d = at::_foreach_add(d, g.momentum, opt_.momentum);
    else
      d = g.momentum;
  }
  at::_foreach_add_(params, d, -opt_.lr);
}

void MultiTensorOptimizer::step_adamw(GroupState& g, const std::vector<at::Tensor>& params,
                                      const std::vector<at::Tensor>& grads) {
  if (!g.initialized) {
    for (const auto& p : params) {
      g.exp_avg.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
      g.exp_avg_sq.push_back(at::zeros_like(p, at::MemoryFormat::Preserve));
      g.step_count.push_back(at::zeros({}, p.options().dtype(at::kFloat)));
    }
    g.initialized = true;
  }
  const double wd = g.group.weight_decay;
  if (fused_) {
    at::_foreach_add_(g.step_count, 1.0);
    at::_fused_adamw_(params, grads, g.exp_avg, g.exp_avg_sq, /*max_exp_avg_sqs=*/{}, g.step_count, opt_.lr,
                      opt_.beta1, opt_.beta2, wd, opt_.eps, /*amsgrad=*/false, /*maximize=*/false);
    return;
  }
  // Every parameter of a group has taken the same number of steps: keep the count on the host.
  const double step = static_cast<double>(steps_);
  if (wd != 0) at::_foreach_mul_(params, 1.0 - opt_.lr * wd);
  at::_foreach_lerp_(g.exp_avg, grads, 1.0 - opt_.beta1);
  at::_foreach_mul_(g.exp_avg_sq, opt_.beta2);
  at::_foreach_addcmul_(g.exp_avg_sq, grads, grads, 1.0 - opt_.beta2);
  const double bc1 = 1.0 - std::pow(opt_.beta1, step);
  const double bc2 = 1.0 - std::pow(opt_.beta2, step);
  auto denom = at::_foreach_sqrt(g.exp_avg_sq);
  at::_foreach_div_(denom, std::sqrt(bc2));
  at::_foreach_add_(denom, opt_.eps);
  at::_foreach_addcdiv_(params, g.exp_avg, denom, -opt_.lr / bc1);
}

}  // namespace crosstrain::core

namespace crosstrain::core {

namespace {

// Lists typed Any: a typed int or float list pickles as torch.jit's build_intlist/build_floatlist,
// which torch.load(weights_only=True) refuses.
c10::impl::GenericList int_list(const std::vector<int64_t>& v) {
  c10::impl::GenericList l(c10::AnyType::get());
  for (auto x : v) l.push_back(x);
  return l;
}

c10::impl::GenericList double_list(size_t n, double value) {
  c10::impl::GenericList l(c10::AnyType::get());
  for (size_t i = 0; i < n; ++i) l.push_back(value);
  return l;
}

// What torch.optim writes for an option that was left at its default (foreach, fused).
c10::IValue none() { return c10::IValue(); }

}  // namespace

std::vector<at::Tensor> MultiTensorOptimizer::state_tensors() const {
  std::vector<at::Tensor> out;
  for (const auto& g : groups_)
    for (const auto* list : {&g.momentum, &g.exp_avg, &g.exp_avg_sq, &g.step_count})
      out.insert(out.end(), list->begin(), list->end());
  return out;
}

StateDict MultiTensorOptimizer::state_dict() const {
  c10::impl::GenericDict state(c10::IntType::get(), c10::AnyType::get());
  c10::impl::GenericList groups(c10::AnyType::get());
  int64_t index = 0;
  for (const auto& g : groups_) {
    std::vector<int64_t> ids;
    const size_t n = g.group.params.size();
    const size_t kept = kind_ == OptimizerKind::SGD ? g.momentum.size() : g.exp_avg.size();
    if (g.initialized && kept != 0 && kept != n)
      throw std::logic_error("optimizer state covers " + std::to_string(kept) + " of " + std::to_string(n) +
                             " parameters of a group: some parameters never had a gradient");
    for (size_t i = 0; i < n; ++i, ++index) {
      ids.push_back(index);
      if (!g.initialized) continue;
      StateDict ps = make_state_dict();
      if (kind_ == OptimizerKind::SGD) {
        if (opt_.momentum != 0) ps.insert("momentum_buffer", g.momentum[i]);
        else ps.insert("momentum_buffer", none());
      } else {
        const double step = fused_ ? g.step_count[i].item<double>() : static_cast<double>(steps_);
        ps.insert("step", at::scalar_tensor(step, at::TensorOptions().dtype(at::kFloat)));
        ps.insert("exp_avg", g.exp_avg[i]);
        ps.insert("exp_avg_sq", g.exp_avg_sq[i]);
      }
      state.insert(index, ps);
    }
    StateDict pg = make_state_dict();
    pg.insert("lr", opt_.lr);
    pg.insert("weight_decay", g.group.weight_decay);
    if (kind_ == OptimizerKind::SGD) {
      pg.insert("momentum", opt_.momentum);
      pg.insert("dampening", opt_.dampening);
      pg.insert("nesterov", opt_.nesterov);
    } else {
      pg.insert("betas", c10::ivalue::Tuple::create({opt_.beta1, opt_.beta2}));
      pg.insert("eps", opt_.eps);
      pg.insert("amsgrad", false);
      pg.insert("capturable", false);
      pg.insert("decoupled_weight_decay", true);
    }
    pg.insert("maximize", false);
    pg.insert("foreach", none());
    pg.insert("differentiable", false);
    pg.insert("fused", none());
    pg.insert("params", int_list(ids));
    groups.push_back(pg);
  }
  StateDict d = make_state_dict();
  d.insert("state", state);
  d.insert("param_groups", groups);
  return d;
}

void MultiTensorOptimizer::load_state_dict(const StateDict& d) {
  const std::string where = "optimizer state";
  const auto saved_groups = state_list(d, "param_groups", where);
  const auto state = state_dict_at(d, "state", where);
  if (saved_groups.size() != groups_.size())
    throw std::invalid_argument(where + ": " + std::to_string(saved_groups.size()) + " parameter groups, this run has " +
                                std::to_string(groups_.size()));
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    if (!saved_groups[gi].isGenericDict()) throw std::invalid_argument(where + ": param_groups entries must be dicts");
    const auto ids = state_list(saved_groups[gi].toGenericDict(), "params", where);
    if (ids.size() != groups_[gi].group.params.size())
      throw std::invalid_argument(where + ": group " + std::to_string(gi) + " has " + std::to_string(ids.size()) +
                                  " parameters, this run has " + std::to_string(groups_[gi].group.params.size()));
  }
  opt_.lr = state_double(saved_groups.front().toGenericDict(), "lr", where);
  at::NoGradGuard no_grad;
  int64_t max_step = 0;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    auto& g = groups_[gi];
    const auto ids = state_list(saved_groups[gi].toGenericDict(), "params", where);
    g.momentum.clear();
    g.exp_avg.clear();
    g.exp_avg_sq.clear();
    g.step_count.clear();
    size_t with_state = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto& p = g.group.params[i];
      auto it = state.find(ids[i]);
      if (it == state.end()) continue;
      const StateDict ps = it->value().toGenericDict();
      const std::string pw = where + " of parameter " + std::to_string(ids[i].toInt());
      auto like_param = [&](const at::Tensor& t, const char* key) {
        if (t.sizes() != p.sizes())
          throw std::invalid_argument(pw + ": '" + key + "' does not have the parameter's shape");
        return t.to(p.device(), p.scalar_type()).clone(at::MemoryFormat::Preserve);
      };
      ++with_state;
      if (kind_ == OptimizerKind::SGD) {
        const auto& mb = state_value(ps, "momentum_buffer", pw);
        if (mb.isTensor()) g.momentum.push_back(like_param(mb.toTensor(), "momentum_buffer"));
      } else {
        const double step = ivalue_to_double(state_value(ps, "step", pw), pw + " 'step'");
        g.exp_avg.push_back(like_param(state_tensor(ps, "exp_avg", pw), "exp_avg"));
        g.exp_avg_sq.push_back(like_param(state_tensor(ps, "exp_avg_sq", pw), "exp_avg_sq"));
        g.step_count.push_back(at::scalar_tensor(step, p.options().dtype(at::kFloat)));
        max_step = std::max(max_step, static_cast<int64_t>(step));
      }
    }
    if (with_state != 0 && with_state != ids.size())
      throw std::invalid_argument(where + ": group " + std::to_string(gi) + " has state for " +
                                  std::to_string(with_state) + " of " + std::to_string(ids.size()) + " parameters");
    g.initialized = with_state != 0;
  }
  if (kind_ == OptimizerKind::AdamW) steps_ = max_step;
}

StateDict schedule_state_dict(const LrSchedule& s, int64_t steps_taken, size_t param_groups) {
  StateDict d = make_state_dict();
  d.insert("base_lrs", double_list(param_groups, s.base_lr));
  d.insert("last_epoch", steps_taken);
  d.insert("_step_count", steps_taken + 1);
  d.insert("_last_lr", double_list(param_groups, s.lr(steps_taken)));
  const char* kind = s.kind == ScheduleKind::Step ? "step" : s.kind == ScheduleKind::Cosine ? "cosine" : "constant";
  d.insert("kind", std::string(kind));
  d.insert("warmup_steps", s.warmup_steps);
  d.insert("total_steps", s.total_steps);
  d.insert("step_size", s.step_size);
  d.insert("gamma", s.gamma);
  return d;
}

int64_t schedule_position(const StateDict& d) {
  const int64_t pos = state_int(d, "last_epoch", "lr scheduler state");
  if (pos < 0) throw std::invalid_argument("lr scheduler state: last_epoch must be >= 0");
  return pos;
}

}  // namespace crosstrain::core
