// The Trainer phase by phase on a tiny model (no ResNet): the order of phases and observer events,
// module events, and state as an API (every part round-trips, and a trainer restored from a state
// continues bit for bit where the state was taken).
#include "tools/train/trainer.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>

#include <limits>
#include <sstream>

#include "core/rng_state.h"
#include "test_support.h"
#include "tools/train/run_plan.h"

using namespace crosstrain;
using namespace crosstrain::train;

namespace {

// conv -> bn -> relu -> pool -> fc, with module events for "conv", "bn" and "fc".
class TinyNetImpl final : public core::TrainableModel {
 public:
  TinyNetImpl() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3).padding(1)));
    bn = register_module("bn", torch::nn::BatchNorm2d(4));
    fc = register_module("fc", torch::nn::Linear(4, 10));
  }
  at::Tensor forward(at::Tensor x) override {
    x = run("conv", [&] { return conv->forward(x); });
    x = run("bn", [&] { return bn->forward(x); });
    x = torch::relu(x);
    x = at::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return run("fc", [&] { return fc->forward(x); });
  }
  void set_observer(core::ForwardObserver* o) override { observer_ = o; }

 private:
  template <typename F>
  at::Tensor run(const std::string& name, F&& f) {
    if (!observer_) return f();
    observer_->on_enter(name);
    return observer_->on_exit(name, f());
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Linear fc{nullptr};
  core::ForwardObserver* observer_ = nullptr;
};

TrainConfig tiny_config(const std::string& precision = "fp32", const std::string& optimizer = "sgd") {
  TrainConfig c;
  c.device = "cpu";
  c.batch_size = 4;
  c.image_size = 8;
  c.num_classes = 10;
  c.steps = 6;
  c.lr = 0.05;
  c.precision = precision;
  c.optimizer = optimizer;
  c.schedule = "cosine";
  c.lr_warmup_steps = 2;
  c.progress = false;
  c.seed = 3;
  return c;
}

// A tiny run's parts: a fresh TinyNet seeded by the config, synthetic data with 3 distinct batches.
struct TinyRun {
  core::DeviceContext dev = core::DeviceContext::open("cpu");
  RunPlan plan;
  std::shared_ptr<TinyNetImpl> model;
  std::unique_ptr<Trainer> trainer;

  explicit TinyRun(const TrainConfig& c, std::unique_ptr<core::BatchSource> source = nullptr) {
    plan = resolve(check_config(c), dev);
    at::manual_seed(c.seed);
    model = std::make_shared<TinyNetImpl>();
    model->train();
    if (!source) {
      core::SyntheticOptions so = synthetic_options(c);
      so.distinct_batches = 3;
      source = core::make_synthetic_source(so, at::kCPU);
    }
    trainer = std::make_unique<Trainer>(plan, dev, make_trainer_parts(plan, at::kCPU, model, std::move(source), nullptr));
  }
  std::vector<double> run(int64_t steps) {
    std::vector<double> losses;
    for (int64_t i = 0; i < steps; ++i) losses.push_back(trainer->step().loss);
    return losses;
  }
};

// Records every event as a line of text.
class EventLog final : public TrainObserver {
 public:
  std::vector<std::string> events;
  bool modules = false;
  void on_run_begin(const RunPlan&) override { events.push_back("run_begin"); }
  void on_step_begin(int64_t s) override { events.push_back("step_begin " + std::to_string(s)); }
  void on_phase_begin(int64_t, Phase p) override { events.push_back(std::string("+") + phase_name(p)); }
  void on_phase_end(int64_t, Phase p) override { events.push_back(std::string("-") + phase_name(p)); }
  bool wants_module_events() const override { return modules; }
  void on_module_enter(const std::string& m) override { events.push_back("enter " + m); }
  at::Tensor on_module_exit(const std::string& m, const at::Tensor& out) override {
    events.push_back("exit " + m);
    return out;
  }
  void on_loss(int64_t, const at::Tensor&, std::optional<double> scale) override {
    events.push_back(scale ? "loss scaled" : "loss");
  }
  bool wants_param_grads() const override { return true; }
  void on_param_grads(int64_t, bool scaled, const NamedTensors& g) override {
    events.push_back(std::string(scaled ? "grads scaled " : "grads ") + std::to_string(g.size()));
  }
  void on_step_end(const StepRecord& r) override { events.push_back("step_end " + std::to_string(r.step)); }
  void on_run_end(TrainResult&) override { events.push_back("run_end"); }
};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += e + "|";
  return s;
}


// Deep copy: the trainer's state dict holds live tensors.
c10::IValue snapshot_value(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().clone();
  if (v.isGenericDict()) {
    auto src = v.toGenericDict();
    c10::impl::GenericDict out(src.keyType(), src.valueType());
    for (const auto& item : src) out.insert(item.key(), snapshot_value(item.value()));
    return out;
  }
  return v;
}

void expect_same_parameters(torch::nn::Module& a, torch::nn::Module& b) {
  auto pa = core::model_state_dict(a), pb = core::model_state_dict(b);
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(at::equal(pa[i].second, pb[i].second)) << pa[i].first;
}

}  // namespace

TEST(Trainer, PhasesRunInTheDocumentedOrder) {
  TinyRun run(tiny_config());
  EventLog log;
  log.modules = true;
  run.trainer->add_observer(&log);
  run.trainer->begin_run();
  run.trainer->step();
  TrainResult r;
  run.trainer->end_run(r);
  const std::string want =
      "run_begin|step_begin 0|+data_wait|-data_wait|+forward|enter conv|exit conv|enter bn|exit bn|enter fc|exit fc|"
      "-forward|loss|+backward|-backward|+grad_sync|-grad_sync|+unscale_clip|grads 6|-unscale_clip|"
      "+optimizer_step|-optimizer_step|+scaler_update|-scaler_update|step_end 0|run_end|";
  EXPECT_EQ(joined(log.events), want);
}

TEST(Trainer, ScaledRunsReportScaledThenTrueGradients) {
  auto c = tiny_config("fp32");
  c.loss_scale = "dynamic";
  TinyRun run(c);
  EventLog log;
  run.trainer->add_observer(&log);
  run.trainer->begin_run();
  run.trainer->step();
  const std::string s = joined(log.events);
  EXPECT_NE(s.find("loss scaled|+backward|-backward|+grad_sync|-grad_sync|grads scaled 6|+unscale_clip|grads 6|"),
            std::string::npos)
      << s;
  ASSERT_NE(run.trainer->scaler(), nullptr);
}

TEST(Trainer, ObserversCannotBeAddedMidRun) {
  TinyRun run(tiny_config());
  EventLog log;
  run.trainer->begin_run();
  EXPECT_THROW(run.trainer->add_observer(&log), std::logic_error);
}

TEST(Trainer, StepBeforeBeginRunIsAnError) {
  TinyRun run(tiny_config());
  EXPECT_THROW(run.trainer->step(), std::logic_error);
}

TEST(Trainer, ModuleExitsRunInReverseSoLaterObserversSeeFirst) {
  // A replacement returned by the observer added last is what the one added first records.
  struct Replace final : TrainObserver {
    bool wants_module_events() const override { return true; }
    bool reads_module_outputs() const override { return true; }
    at::Tensor on_module_exit(const std::string& m, const at::Tensor& out) override {
      return m == "fc" ? out * 0.0 : out;
    }
  };
  struct Record final : TrainObserver {
    double fc_abs_sum = -1;
    bool wants_module_events() const override { return true; }
    at::Tensor on_module_exit(const std::string& m, const at::Tensor& out) override {
      if (m == "fc") fc_abs_sum = out.abs().sum().item<double>();
      return out;
    }
  };
  TinyRun run(tiny_config());
  Record record;
  Replace replace;
  run.trainer->add_observer(&record);
  run.trainer->add_observer(&replace);
  run.trainer->begin_run();
  const double loss = run.trainer->step().loss;
  EXPECT_EQ(record.fc_abs_sum, 0.0);
  EXPECT_NEAR(loss, std::log(10.0), 1e-5);  // zero logits: uniform over 10 classes
}

// ---- state as an API ----------------------------------------------------------------------------

TEST(TrainerState, OptimizerStateDictHasTorchLayout) {
  for (const std::string opt : {"sgd", "adamw"}) {
    TinyRun run(tiny_config("fp32", opt));
    const auto before = run.trainer->optimizer().state_dict();
    EXPECT_EQ(core::state_dict_at(before, "state", "t").size(), 0u) << "no state before the first step, as torch";
    run.trainer->begin_run();
    run.run(2);
    const auto sd = run.trainer->optimizer().state_dict();
    const auto groups = core::state_list(sd, "param_groups", "t");
    ASSERT_EQ(groups.size(), 2u);  // weights with decay, then 1-D parameters without
    const auto g0 = groups[0].toGenericDict(), g1 = groups[1].toGenericDict();
    EXPECT_GT(core::state_double(g0, "weight_decay", "t"), 0);
    EXPECT_EQ(core::state_double(g1, "weight_decay", "t"), 0);
    const auto state = core::state_dict_at(sd, "state", "t");
    const size_t n = core::state_list(g0, "params", "t").size() + core::state_list(g1, "params", "t").size();
    EXPECT_EQ(state.size(), n);
    const auto first = state.at(int64_t{0}).toGenericDict();
    if (opt == "sgd") {
      EXPECT_TRUE(core::state_has(g0, "momentum") && core::state_has(g0, "nesterov"));
      EXPECT_TRUE(core::state_tensor(first, "momentum_buffer", "t").defined());
    } else {
      EXPECT_TRUE(core::state_has(g0, "betas") && core::state_has(g0, "eps"));
      EXPECT_EQ(core::state_double(first, "step", "t"), 2.0);
      EXPECT_TRUE(core::state_tensor(first, "exp_avg_sq", "t").defined());
    }
  }
}

// Counted from the tensors: fp32 weights, one gradient each, and the optimizer's state by kind
// (SGD with momentum: a buffer each; without: none; AdamW: two, and a 4-byte step count each).
TEST(TrainerState, FixedStateIsCountedFromTheTensors) {
  struct Case {
    std::string optimizer;
    double momentum;
    int64_t buffers_per_param;
  };
  for (const Case& k : {Case{"sgd", 0.9, 1}, Case{"sgd", 0.0, 0}, Case{"adamw", 0.9, 2}}) {
    auto c = tiny_config("fp32", k.optimizer);
    c.momentum = k.momentum;
    TinyRun run(c);
    int64_t weights = 0, tensors = 0;
    for (const auto& p : run.model->parameters()) {
      weights += p.numel() * 4;
      ++tensors;
    }
    EXPECT_EQ(run.trainer->fixed_state().gradients, 0) << "no gradient before the first step";
    run.trainer->begin_run();
    run.run(2);
    TrainResult r;
    run.trainer->end_run(r);
    const auto& f = r.fixed_state;
    EXPECT_EQ(f.parameters, weights) << k.optimizer;
    EXPECT_EQ(f.gradients, weights) << k.optimizer << ": dropped between steps, counted at their largest";
    const int64_t step_counts = k.optimizer == "adamw" ? 4 * tensors : 0;
    EXPECT_EQ(f.optimizer, k.buffers_per_param * weights + step_counts) << k.optimizer << " momentum " << k.momentum;
    EXPECT_EQ(f.buffers, (4 + 4) * 4 + 8) << "bn: running mean and var of 4 channels, the batch count";
    EXPECT_EQ(f.total(), f.parameters + f.buffers + f.gradients + f.optimizer);
  }
}

TEST(TrainerState, ScheduleAndDataPositionFollowTheSteps) {
  TinyRun run(tiny_config());
  run.trainer->begin_run();
  run.run(4);
  const auto sd = run.trainer->state_dict();
  EXPECT_EQ(core::state_int(sd, "step", "t"), 4);
  const auto sched = core::state_dict_at(sd, "lr_scheduler", "t");
  EXPECT_EQ(core::state_int(sched, "last_epoch", "t"), 4);
  EXPECT_EQ(core::state_int(sched, "_step_count", "t"), 5);
  const auto data = core::state_dict_at(sd, "data", "t");
  EXPECT_EQ(core::state_int(data, "batch", "t"), 4);
  EXPECT_EQ(core::state_int(data, "seed", "t"), 3);
  EXPECT_EQ(core::state_dict_at(sd, "scaler", "t").size(), 0u);  // fp32: no scaler, {} as in PyTorch
}

TEST(TrainerState, RngStateRoundTrips) {
  at::manual_seed(11);
  const auto saved = core::rng_state_dict(at::kCPU);
  const auto saved_copy = snapshot_value(saved).toGenericDict();
  const auto a = at::rand({8});
  at::manual_seed(12345);
  core::load_rng_state_dict(saved_copy, at::kCPU);
  EXPECT_TRUE(at::equal(at::rand({8}), a));
  auto wrong = saved_copy.copy();
  wrong.insert_or_assign("cpu", at::zeros({3}, at::kByte));
  EXPECT_THROW(core::load_rng_state_dict(wrong, at::kCPU), std::invalid_argument);
}

// A run of N steps, and a run of k steps whose state is loaded into a fresh trainer that runs the
// other N-k: the same losses and the same final weights, bit for bit.
void expect_exact_resume(const TrainConfig& c, int64_t k) {
  TinyRun straight(c);
  straight.trainer->begin_run();
  const auto all = straight.run(c.steps);

  TinyRun first(c);
  first.trainer->begin_run();
  auto losses = first.run(k);
  const auto state = snapshot_value(first.trainer->state_dict()).toGenericDict();
  first.trainer.reset();
  at::manual_seed(999);  // whatever happened in between
  TinyRun second(c);
  second.trainer->load_state_dict(state);
  second.trainer->begin_run();
  const auto rest = second.run(c.steps - k);
  losses.insert(losses.end(), rest.begin(), rest.end());
  EXPECT_EQ(losses, all) << c.precision << " " << c.optimizer;
  expect_same_parameters(*straight.model, *second.model);
}

TEST(TrainerState, ResumeIsBitwiseExactSgdFp32) { expect_exact_resume(tiny_config("fp32", "sgd"), 3); }
TEST(TrainerState, ResumeIsBitwiseExactAdamWBf16) { expect_exact_resume(tiny_config("bf16", "adamw"), 2); }

TEST(TrainerState, ResumeIsBitwiseExactWithScalerAfterASkippedStep) {
  auto c = tiny_config("fp32");
  c.loss_scale = "dynamic";
  c.scale_growth_interval = 2;
  c.inject_inf_at_step = 1;
  c.scaler_kernels = "portable";
  TinyRun probe(c);
  probe.trainer->begin_run();
  probe.run(3);
  EXPECT_EQ(probe.trainer->scaler()->state().skipped_steps, 1);
  expect_exact_resume(c, 3);
}

TEST(TrainerState, LoadRejectsAStateOfAnotherShape) {
  TinyRun a(tiny_config("fp32", "sgd"));
  a.trainer->begin_run();
  a.run(1);
  auto state = snapshot_value(a.trainer->state_dict()).toGenericDict();
  TinyRun adam(tiny_config("fp32", "adamw"));
  EXPECT_THROW(adam.trainer->load_state_dict(state), std::invalid_argument);  // no exp_avg in SGD's state
  auto bad = state.copy();
  auto sched = core::state_dict_at(bad, "lr_scheduler", "t").copy();
  sched.insert_or_assign("last_epoch", int64_t{7});
  bad.insert_or_assign("lr_scheduler", sched);
  TinyRun b(tiny_config());
  EXPECT_THROW(b.trainer->load_state_dict(bad), std::invalid_argument);
}

// A state whose data position does not fit (another seed) is refused after its weights and
// momentum were taken: the trainer must come out as it went in, so that a caller can try another
// state (--resume auto), and train on exactly as if nothing had been tried.
TEST(TrainerState, AFailedLoadLeavesTheTrainerAsItWas) {
  TinyRun a(tiny_config("fp32", "sgd"));
  a.trainer->begin_run();
  a.run(2);
  auto bad = snapshot_value(a.trainer->state_dict()).toGenericDict();
  auto data = core::state_dict_at(bad, "data", "t").copy();
  data.insert_or_assign("seed", int64_t{999});
  bad.insert_or_assign("data", data);

  TinyRun tried(tiny_config("fp32", "sgd"));
  EXPECT_THROW(tried.trainer->load_state_dict(bad), std::invalid_argument);
  TinyRun fresh(tiny_config("fp32", "sgd"));
  expect_same_parameters(*tried.model, *fresh.model);
  const auto state = tried.trainer->state_dict();
  EXPECT_EQ(core::state_dict_at(core::state_dict_at(state, "optimizer", "t"), "state", "t").size(), 0u)
      << "momentum of the refused state stayed";
  EXPECT_EQ(tried.trainer->steps_done(), 0);
  at::manual_seed(5);
  tried.trainer->begin_run();
  const auto after_failed_load = tried.run(3);
  at::manual_seed(5);
  fresh.trainer->begin_run();
  EXPECT_EQ(after_failed_load, fresh.run(3));
}

// ---- the plan -------------------------------------------------------------------------------------

TEST(RunPlan, DefaultWarmupIsLoweredForShortRunsAndSaid) {
  auto dev = core::DeviceContext::open("cpu");
  TrainConfig c = tiny_config();
  c.steps = 3;
  const RunPlan p = resolve(check_config(c), dev);
  EXPECT_EQ(p.resolved.warmup_steps, 2);
  EXPECT_EQ(p.asked.warmup_steps, -1);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("warm-up"), std::string::npos);
  c.steps = 10;
  EXPECT_EQ(resolve(check_config(c), dev).resolved.warmup_steps, 3);
  EXPECT_TRUE(resolve(check_config(c), dev).notes.empty());
  c.steps = 3;
  c.warmup_steps = 3;  // explicit and impossible: an error, not a silent change
  EXPECT_THROW(check_config(c), std::invalid_argument);
}

TEST(RunPlan, ResolvesDerivedValuesWithoutChangingTheRequest) {
  auto dev = core::DeviceContext::open("cpu");
  TrainConfig c = tiny_config();
  c.lr = -1;
  c.batch_size = 64;
  c.num_classes = 0;
  c.image_size = 0;
  const RunPlan p = resolve(check_config(c), dev);
  EXPECT_DOUBLE_EQ(p.resolved.lr, 0.025);  // 0.1 x 64 / 256
  EXPECT_EQ(p.resolved.num_classes, 1000);
  EXPECT_EQ(p.resolved.image_size, 224);
  EXPECT_EQ(p.asked.lr, -1);
  EXPECT_EQ(p.optimizer, core::OptimizerKind::SGD);
  EXPECT_EQ(p.schedule, core::ScheduleKind::Cosine);
  DataFacts f;
  f.num_classes = 10;
  f.image_size = 28;
  f.batches_per_epoch = 5;
  f.has_val_split = false;
  c.data = "imagefolder:/x";
  c.epochs = 2;
  const RunPlan q = resolve(check_config(c), dev, f);
  EXPECT_EQ(q.resolved.steps, 10);
  EXPECT_EQ(q.resolved.num_classes, 10);
  EXPECT_FALSE(q.resolved.eval_at_end);
  EXPECT_EQ(q.notes.size(), 1u);
  c.eval_every_steps = 2;
  EXPECT_THROW(resolve(check_config(c), dev, f), std::invalid_argument);
}

TEST(RunPlan, RejectsNonFiniteAndNegativeSettings) {
  for (auto edit : std::vector<std::function<void(TrainConfig&)>>{
           [](TrainConfig& c) { c.lr = std::numeric_limits<double>::quiet_NaN(); },
           [](TrainConfig& c) { c.clip_grad_norm = std::numeric_limits<double>::quiet_NaN(); },
           [](TrainConfig& c) { c.momentum = -0.5; },
           [](TrainConfig& c) { c.weight_decay = std::numeric_limits<double>::infinity(); },
           [](TrainConfig& c) { c.cpu_allocator = "slab"; }}) {
    TrainConfig c = tiny_config();
    edit(c);
    EXPECT_THROW(check_config(c), std::invalid_argument);
  }
}

TEST(RunPlan, ModelOptionsAreTheConfigurations) {
  TrainConfig c = tiny_config();
  c.num_classes = 37;
  c.small_stem = true;
  c.base_width = 16;
  c.zero_init_residual = true;
  const core::ModelOptions o = model_options(c);
  EXPECT_EQ(o.num_classes, 37);
  EXPECT_TRUE(o.small_stem);
  EXPECT_EQ(o.base_width, 16);
  EXPECT_TRUE(o.zero_init_residual);
  EXPECT_EQ(o.in_channels, 3);
}

TEST(RunPlan, SyntheticBatchesAreTheConfigurationsAndDifferByRank) {
  TrainConfig c = tiny_config();
  c.batch_size = 6;
  c.image_size = 20;
  c.num_classes = 7;
  c.channels_last = true;
  c.seed = 11;
  const core::SyntheticOptions o = synthetic_options(c);
  EXPECT_EQ(o.batch_size, 6);
  EXPECT_EQ(o.image_size, 20);
  EXPECT_EQ(o.num_classes, 7);
  EXPECT_TRUE(o.channels_last);
  EXPECT_EQ(o.seed, 11u);
  c.rank = 3;
  c.world_size = 4;
  EXPECT_EQ(synthetic_options(c).seed, 14u);  // --seed + rank
}
