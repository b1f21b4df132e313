#include "tools/train/trainer.h"

#include <ATen/record_function.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "core/rng_state.h"

namespace crosstrain::train {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Data: return "data_wait";
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::GradSync: return "grad_sync";
    case Phase::UnscaleClip: return "unscale_clip";
    case Phase::OptimizerStep: return "optimizer_step";
    case Phase::ScalerUpdate: return "scaler_update";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Brackets one phase: observers hear begin and end, and profilers see a user scope of its name.
class PhaseScope {
 public:
  PhaseScope(const std::vector<TrainObserver*>& observers, int64_t step, Phase phase)
      : observers_(observers), step_(step), phase_(phase), record_(at::RecordScope::USER_SCOPE) {
    for (auto* o : observers_) o->on_phase_begin(step_, phase_);
    if (record_.isActive()) record_.before(phase_name(phase_));
  }
  ~PhaseScope() {
    record_.end();
    for (auto* o : observers_) o->on_phase_end(step_, phase_);
  }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  const std::vector<TrainObserver*>& observers_;
  int64_t step_;
  Phase phase_;
  at::RecordFunction record_;
};

}  // namespace

// Forwards the model's module events to the observers that want them.
class Trainer::ModuleEvents final : public core::ForwardObserver {
 public:
  explicit ModuleEvents(std::vector<TrainObserver*> list) : list_(std::move(list)) {}
  void on_enter(const std::string& m) override {
    for (auto* o : list_) o->on_module_enter(m);
  }
  at::Tensor on_exit(const std::string& m, const at::Tensor& out) override {
    at::Tensor t = out;
    for (auto it = list_.rbegin(); it != list_.rend(); ++it) t = (*it)->on_module_exit(m, t);
    return t;
  }
  bool reads_outputs() const override {
    for (auto* o : list_)
      if (o->reads_module_outputs()) return true;
    return false;
  }
  bool empty() const { return list_.empty(); }

 private:
  std::vector<TrainObserver*> list_;
};

TrainerParts make_trainer_parts(const RunPlan& plan, c10::Device device, std::shared_ptr<core::TrainableModel> model,
                                std::unique_ptr<core::BatchSource> source,
                                std::function<void(const std::string&)> scaler_log) {
  TrainerParts p;
  const auto& c = plan.resolved;
  p.optimizer = std::make_unique<core::MultiTensorOptimizer>(
      plan.optimizer, core::split_decay_groups(model->named_parameters(), c.no_decay_bn_bias, c.weight_decay),
      optimizer_options(plan));
  p.model = std::move(model);
  p.source = std::move(source);
  p.schedule = lr_schedule(plan);
  if (plan.precision.use_scaler)
    p.scaler = std::make_unique<core::GradScaler>(device, scaler_options(plan), std::move(scaler_log));
  return p;
}

Trainer::Trainer(RunPlan plan, const core::DeviceContext& device, TrainerParts parts)
    : plan_(std::move(plan)), device_(device), parts_(std::move(parts)) {
  if (!parts_.model || !parts_.source || !parts_.optimizer)
    throw std::invalid_argument("trainer: a model, a batch source and an optimizer are required");
}

Trainer::~Trainer() {
  if (module_events_) parts_.model->set_observer(nullptr);
}

void Trainer::add_observer(TrainObserver* o) {
  if (running_) throw std::logic_error("trainer: observers must be added before begin_run");
  observers_.push_back(o);
}

void Trainer::begin_run() {
  std::vector<TrainObserver*> module_watchers;
  for (auto* o : observers_)
    if (o->wants_module_events()) module_watchers.push_back(o);
  if (!module_watchers.empty()) {
    module_events_ = std::make_unique<ModuleEvents>(std::move(module_watchers));
    parts_.model->set_observer(module_events_.get());
  }
  running_ = true;
  for (auto* o : observers_) o->on_run_begin(plan_);
}

void Trainer::end_run(TrainResult& result) {
  if (module_events_) parts_.model->set_observer(nullptr);
  module_events_.reset();
  running_ = false;
  if (parts_.scaler) {
    result.skipped_steps = parts_.scaler->state().skipped_steps;
    result.final_loss_scale = parts_.scaler->current_scale();
  }
  result.fixed_state = fixed_state();
  for (auto* o : observers_) o->on_run_end(result);
}

FixedStateBytes Trainer::fixed_state() const {
  FixedStateBytes f;
  f.parameters = core::storage_bytes(parts_.model->parameters());
  f.buffers = core::storage_bytes(parts_.model->buffers());
  f.gradients = gradient_bytes_;
  f.optimizer = core::storage_bytes(parts_.optimizer->state_tensors());
  return f;
}

bool Trainer::want_grads() const {
  for (auto* o : observers_)
    if (o->wants_param_grads()) return true;
  return false;
}

void Trainer::report_grads(bool scaled) {
  if (!want_grads()) return;
  NamedTensors grads;
  for (const auto& p : parts_.model->named_parameters())
    if (p.value().grad().defined()) grads.emplace_back(p.key(), p.value().grad());
  for (auto* o : observers_) o->on_param_grads(step_, scaled, grads);
}

core::Batch Trainer::data_phase() {
  PhaseScope scope(observers_, step_, Phase::Data);
  return parts_.source->next();
}

at::Tensor Trainer::forward_phase(const core::Batch& batch, bool sync) {
  namespace F = torch::nn::functional;
  PhaseScope scope(observers_, step_, Phase::Forward);
  if (parts_.grad_sync) parts_.grad_sync->before_forward(sync);
  core::AutocastGuard autocast(device_.device().type(), plan_.precision.autocast_dtype);
  at::Tensor logits = parts_.model->forward(batch.images);
  at::Tensor loss = F::cross_entropy(logits.to(at::kFloat), batch.labels,
                                     F::CrossEntropyFuncOptions().label_smoothing(plan_.resolved.label_smoothing));
  if (parts_.grad_sync) parts_.grad_sync->after_forward(sync);
  return loss;
}

void Trainer::notify_loss(const at::Tensor& loss) {
  const auto scale = parts_.scaler ? std::optional<double>(parts_.scaler->current_scale()) : std::nullopt;
  for (auto* o : observers_) o->on_loss(step_, loss, scale);
}

void Trainer::backward_phase(const at::Tensor& loss) {
  PhaseScope scope(observers_, step_, Phase::Backward);
  auto run = [&] { (parts_.scaler ? parts_.scaler->scale(loss) : loss).backward(); };
  if (parts_.grad_sync) parts_.grad_sync->backward(run, step_);
  else run();
}

void Trainer::grad_sync_phase() {
  // The Reducer all-reduced the buckets during the last backward and waited for them at its end;
  // one process has nothing to exchange.
  PhaseScope scope(observers_, step_, Phase::GradSync);
}

double Trainer::reported_loss(const at::Tensor& loss) {
  const double local = loss.item<double>();  // waits for the step's work
  if (!parts_.grad_sync) return local;
  return parts_.grad_sync->mean_over_ranks({local}, "averaging the loss of step " + std::to_string(step_))[0];
}

void Trainer::unscale_clip_phase(const std::vector<at::Tensor>& grads) {
  const double clip = plan_.resolved.clip_grad_norm;
  if (parts_.scaler) report_grads(/*scaled=*/true);
  PhaseScope scope(observers_, step_, Phase::UnscaleClip);
  // Clipping and gradient watchers need true gradients; otherwise the scaler's step unscales.
  if (parts_.scaler && (clip > 0 || want_grads())) parts_.scaler->unscale(grads);
  report_grads(/*scaled=*/false);
  if (clip > 0) torch::nn::utils::clip_grad_norm_(parts_.model->parameters(), clip);
}

bool Trainer::optimizer_phase(const std::vector<at::Tensor>& grads) {
  PhaseScope scope(observers_, step_, Phase::OptimizerStep);
  if (!parts_.scaler) {
    parts_.optimizer->step();
    return true;
  }
  return parts_.scaler->step(grads, [&] { parts_.optimizer->step(); });
}

void Trainer::scaler_update_phase() {
  PhaseScope scope(observers_, step_, Phase::ScalerUpdate);
  if (parts_.scaler) parts_.scaler->update();
}

StepRecord Trainer::step() {
  if (!running_) throw std::logic_error("trainer: call begin_run before step");
  for (auto* o : observers_) o->on_step_begin(step_);
  const auto t0 = Clock::now();
  parts_.optimizer->set_lr(parts_.schedule.lr(step_));
  // K micro-batches; the loss of the step is their mean, and each backward gets loss / K, so the
  // accumulated gradient is the gradient of that mean. K = 1 is the plain step, bit for bit.
  const int64_t k = std::max<int64_t>(1, plan_.resolved.accumulate_steps);
  double data_wait_ms = 0;
  at::Tensor loss;
  for (int64_t micro = 0; micro < k; ++micro) {
    for (auto* o : observers_) o->on_micro_batch(step_, micro, k);
    const auto td = Clock::now();
    core::Batch batch = data_phase();
    data_wait_ms += ms_since(td);
    at::Tensor micro_loss = forward_phase(batch, /*sync=*/micro == k - 1);
    notify_loss(micro_loss);
    backward_phase(k == 1 ? micro_loss : micro_loss / static_cast<double>(k));
    loss = micro == 0 ? micro_loss.detach() : loss + micro_loss.detach();
  }
  if (k > 1) loss = loss / static_cast<double>(k);
  grad_sync_phase();
  auto grads = parts_.optimizer->gradients();
  gradient_bytes_ = std::max(gradient_bytes_, core::storage_bytes(grads));
  if (step_ == plan_.resolved.inject_inf_at_step && !grads.empty())
    grads.front().fill_(std::numeric_limits<float>::infinity());
  unscale_clip_phase(grads);
  const bool stepped = optimizer_phase(grads);
  scaler_update_phase();
  // Dropped, also under the Reducer: the next backward's first gradient is then written into its
  // bucket view divided by the world size in one pass (mul_out), where zeroed views would cost a
  // fill, an add and a division over every gradient.
  parts_.optimizer->zero_grad(/*set_to_none=*/true);
  StepRecord rec;
  rec.step = step_;
  rec.loss = reported_loss(loss);
  device_.synchronize();
  rec.lr = parts_.optimizer->lr();
  rec.step_ms = ms_since(t0);
  rec.data_wait_ms = data_wait_ms;
  rec.skipped = !stepped;
  if (parts_.scaler) rec.loss_scale = parts_.scaler->current_scale();
  ++step_;
  if (!std::isfinite(rec.loss) && !parts_.scaler)
    throw NonFiniteLoss("loss is " + std::string(std::isnan(rec.loss) ? "NaN" : "infinite") + " at step " +
                        std::to_string(rec.step) + " (" + plan_.resolved.precision +
                        "); lower --lr, add --clip-grad-norm, or check the input data");
  for (auto* o : observers_) o->on_step_end(rec);
  return rec;
}

core::StateDict Trainer::state_dict() const {
  core::StateDict model = core::make_state_dict();
  for (const auto& [name, t] : core::model_state_dict(*parts_.model)) model.insert(name, t);
  const auto pos = parts_.source->position();
  core::StateDict data = core::make_state_dict();
  data.insert("epoch", pos.epoch);
  data.insert("batch", pos.batch);
  data.insert("seed", static_cast<int64_t>(pos.seed));
  core::StateDict d = core::make_state_dict();
  d.insert("model", model);
  const core::StateDict optimizer = parts_.optimizer->state_dict();
  d.insert("optimizer", optimizer);
  d.insert("scaler", parts_.scaler ? parts_.scaler->state_dict() : core::make_state_dict());
  const size_t groups = core::state_list(optimizer, "param_groups", "optimizer").size();
  d.insert("lr_scheduler", core::schedule_state_dict(parts_.schedule, step_, groups));
  d.insert("rng", core::rng_state_dict(device_.device()));
  d.insert("data", data);
  d.insert("step", step_);
  const auto layout = parts_.grad_sync ? parts_.grad_sync->bucket_layout() : std::vector<std::vector<int64_t>>{};
  if (!layout.empty()) {
    c10::impl::GenericList buckets(c10::AnyType::get());
    for (const auto& bucket : layout) {
      c10::impl::GenericList indices(c10::AnyType::get());
      for (int64_t i : bucket) indices.push_back(i);
      buckets.push_back(indices);
    }
    core::StateDict dp = core::make_state_dict();
    dp.insert("buckets", buckets);
    d.insert("data_parallel", dp);
  }
  return d;
}

namespace {

// A copy of a state tree in host memory that shares nothing with the run.
c10::IValue host_copy(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().detach().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
  if (v.isGenericDict()) {
    auto src = v.toGenericDict();
    c10::impl::GenericDict out(src.keyType(), src.valueType());
    for (const auto& item : src) out.insert(item.key(), host_copy(item.value()));
    return out;
  }
  if (v.isList()) {
    auto src = v.toList();
    c10::impl::GenericList out(src.elementType());
    for (const auto& e : src) out.push_back(host_copy(e));
    return out;
  }
  return v;
}

std::vector<std::vector<int64_t>> bucket_layout_of(const core::StateDict& dp, const std::string& where) {
  std::vector<std::vector<int64_t>> layout;
  for (const auto& bucket : core::state_list(dp, "buckets", where)) {
    if (!bucket.isList()) throw std::invalid_argument(where + ": 'buckets' must be lists of parameter indices");
    std::vector<int64_t> indices;
    for (const auto& element : bucket.toList()) {
      const c10::IValue i = element;
      if (!i.isInt()) throw std::invalid_argument(where + ": 'buckets' must be lists of parameter indices");
      indices.push_back(i.toInt());
    }
    layout.push_back(std::move(indices));
  }
  return layout;
}

}  // namespace

void Trainer::load_state_dict(const core::StateDict& d) {
  // The parts load one after another, and each changes the trainer: a failure in the optimizer's
  // state would leave the weights of the checkpoint and the RNG of the fresh run. Put back what was.
  const core::StateDict before = host_copy(state_dict()).toGenericDict();
  try {
    apply_state_dict(d);
  } catch (...) {
    try {
      apply_state_dict(before);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("training state: a failed load could not be undone: ") + e.what());
    }
    throw;
  }
}

void Trainer::apply_state_dict(const core::StateDict& d) {
  const std::string where = "training state";
  const int64_t step = core::state_int(d, "step", where);
  const int64_t sched = core::schedule_position(core::state_dict_at(d, "lr_scheduler", where));
  if (step < 0 || sched != step)
    throw std::invalid_argument(where + ": step " + std::to_string(step) + " and the schedule position " +
                                std::to_string(sched) + " disagree");
  std::map<std::string, at::Tensor> model;
  for (const auto& item : core::state_dict_at(d, "model", where)) {
    if (!item.key().isString() || !item.value().isTensor())
      throw std::invalid_argument(where + ": 'model' must map names to tensors");
    model[item.key().toStringRef()] = item.value().toTensor();
  }
  core::load_model_state_dict(*parts_.model, model, where + " 'model'");
  parts_.optimizer->load_state_dict(core::state_dict_at(d, "optimizer", where));
  const auto scaler = core::state_dict_at(d, "scaler", where);
  if (parts_.scaler && scaler.size() > 0) parts_.scaler->load_state_dict(scaler);
  const auto data = core::state_dict_at(d, "data", where);
  parts_.source->seek({core::state_int(data, "epoch", where + " 'data'"), core::state_int(data, "batch", where + " 'data'"),
                       static_cast<uint64_t>(core::state_int(data, "seed", where + " 'data'"))});
  core::load_rng_state_dict(core::state_dict_at(d, "rng", where), device_.device());
  // Last: it rebuilds the data-parallel engine, which nothing after it could undo.
  if (parts_.grad_sync && core::state_has(d, "data_parallel"))
    parts_.grad_sync->restore_bucket_layout(
        bucket_layout_of(core::state_dict_at(d, "data_parallel", where), where + " 'data_parallel'"));
  step_ = step;
}

}  // namespace crosstrain::train
