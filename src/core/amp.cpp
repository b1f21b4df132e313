#include "core/amp.h"


#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "core/compat.h"

namespace crosstrain::core {

AutocastGuard::AutocastGuard(c10::DeviceType device_type, std::optional<at::ScalarType> dtype)
    : device_type_(device_type) {
  auto prev = compat::autocast_state(device_type);
  prev_enabled_ = prev.enabled;
  prev_dtype_ = prev.dtype;
  compat::set_autocast_state(device_type, {dtype.has_value(), dtype.value_or(prev.dtype)});
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  // Cached casts of weights live until the outermost scope ends; keeping them longer would hold
  // a second copy of every weight.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast_state(device_type_, {prev_enabled_, prev_dtype_});
}

namespace {
std::string scale_text(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}
}  // namespace

GradScaler::GradScaler(c10::Device device, GradScalerOptions options, std::function<void(const std::string&)> log)
    : device_(device), opt_(options), log_(std::move(log)) {
  if (!(opt_.init_scale > 0) || !std::isfinite(opt_.init_scale))
    throw std::invalid_argument("loss scale must be a positive finite number");
  if (opt_.dynamic && (opt_.growth_factor <= 1.0 || opt_.backoff_factor <= 0.0 || opt_.backoff_factor >= 1.0 ||
                       opt_.growth_interval < 1))
    throw std::invalid_argument("loss scaler: growth factor must be > 1, backoff in (0,1), interval >= 1");
  const bool have_fused = compat::has_kernel("aten::_amp_foreach_non_finite_check_and_unscale_", device.type()) &&
                          compat::has_kernel("aten::_amp_update_scale_", device.type());
  switch (opt_.kernels) {
    case ScalerKernels::Auto: fused_ = have_fused; break;
    case ScalerKernels::Fused:
      if (!have_fused)
        throw std::invalid_argument("the fused loss-scaler kernels are not registered for device " + device.str());
      fused_ = true;
      break;
    case ScalerKernels::Portable: fused_ = false; break;
  }
  state_.scale = opt_.init_scale;
  auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  scale_tensor_ = at::full({1}, opt_.init_scale, f32);
  growth_tracker_tensor_ = at::zeros({1}, f32.dtype(at::kInt));
  found_inf_ = at::zeros({1}, f32);
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const {
  return loss * scale_tensor_.to(loss.scalar_type());
}

bool GradScaler::check_and_unscale(const std::vector<at::Tensor>& grads) {
  found_inf_.zero_();
  if (grads.empty()) return false;
  // Inverse computed in double on the host: exact for powers of two, as scales are.
  auto inv = at::full({1}, 1.0 / state_.scale, scale_tensor_.options());
  if (fused_) {
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv);
  } else {
    // Max-abs norm per gradient is inf or NaN exactly when the gradient holds one.
    auto norms = at::_foreach_norm(grads, std::numeric_limits<double>::infinity());
    auto bad = at::logical_not(at::isfinite(at::stack(norms))).any();
    found_inf_.copy_(bad.to(at::kFloat).reshape({1}));
    at::_foreach_mul_(grads, inv.reshape({}));
  }
  return found_inf_.item<float>() != 0.0f;
}

void GradScaler::unscale(const std::vector<at::Tensor>& grads) {
  if (unscaled_this_step_) throw std::logic_error("GradScaler::unscale called twice in one step");
  found_inf_host_ = check_and_unscale(grads);
  unscaled_this_step_ = true;
}

bool GradScaler::step(const std::vector<at::Tensor>& grads, const std::function<void()>& optimizer_step) {
  if (!unscaled_this_step_) unscale(grads);
  ++state_.total_steps;
  if (found_inf_host_) {
    ++state_.skipped_steps;
    if (log_) log_("Gradient overflow. Skipping step");
    return false;
  }
  optimizer_step();
  return true;
}

void GradScaler::update() {
  if (!unscaled_this_step_) throw std::logic_error("GradScaler::update called before step");
  unscaled_this_step_ = false;
  if (!opt_.dynamic) return;
  const double before = state_.scale;
  // Host mirror of _amp_update_scale_'s rule, so log lines need no extra device read.
  if (found_inf_host_) {
    state_.scale *= opt_.backoff_factor;
    state_.growth_tracker = 0;
  } else if (state_.growth_tracker + 1 == opt_.growth_interval) {
    const double grown = state_.scale * opt_.growth_factor;
    if (std::isfinite(static_cast<float>(grown))) state_.scale = grown;
    state_.growth_tracker = 0;
  } else {
    ++state_.growth_tracker;
  }
  if (fused_) {
    at::_amp_update_scale_(scale_tensor_, growth_tracker_tensor_, found_inf_, opt_.growth_factor,
                           opt_.backoff_factor, opt_.growth_interval);
  } else if (state_.scale != before) {
    scale_tensor_.fill_(state_.scale);
  }
  if (log_ && state_.scale < before) log_("Loss scaler reducing loss scale to " + scale_text(state_.scale));
  if (log_ && state_.scale > before) log_("Loss scaler increasing loss scale to " + scale_text(state_.scale));
}

void GradScaler::load_state(const GradScalerState& s) {
  if (!(s.scale > 0) || s.growth_tracker < 0) throw std::invalid_argument("invalid loss scaler state");
  state_ = s;
  scale_tensor_.fill_(s.scale);
  growth_tracker_tensor_.fill_(s.growth_tracker);
}

StateDict GradScaler::state_dict() const {
  StateDict d = make_state_dict();
  d.insert("scale", state_.scale);
  d.insert("growth_factor", opt_.growth_factor);
  d.insert("backoff_factor", opt_.backoff_factor);
  d.insert("growth_interval", opt_.growth_interval);
  d.insert("_growth_tracker", state_.growth_tracker);
  d.insert("skipped_steps", state_.skipped_steps);
  d.insert("total_steps", state_.total_steps);
  return d;
}

void GradScaler::load_state_dict(const StateDict& d) {
  const std::string where = "loss scaler state";
  GradScalerState s;
  s.scale = state_double(d, "scale", where);
  s.growth_tracker = state_int(d, "_growth_tracker", where);
  if (state_has(d, "skipped_steps")) s.skipped_steps = state_int(d, "skipped_steps", where);
  if (state_has(d, "total_steps")) s.total_steps = state_int(d, "total_steps", where);
  if (!(s.scale > 0) || s.growth_tracker < 0 || s.skipped_steps < 0 || s.total_steps < 0)
    throw std::invalid_argument(where + ": scale must be > 0 and counters >= 0");
  load_state(s);
}

}  // namespace crosstrain::core
