#include "tools/train.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/amp.h"
#include "core/batch_source.h"
#include "core/device.h"
#include "core/models.h"
#include "core/optim.h"
#include "core/step_stats.h"
#include "report/terminal.h"
#include "report/units.h"
#include "tools/precision.h"
#include "tools/train_data.h"
#include "tools/train_observer.h"

namespace crosstrain::tools {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

core::GradScalerOptions scaler_options(const TrainConfig& c, const PrecisionPlan& plan) {
  core::GradScalerOptions o;
  o.growth_interval = c.scale_growth_interval;
  if (plan.static_scale) {
    o.dynamic = false;
    o.init_scale = *plan.static_scale;
  }
  if (c.scaler_kernels == "fused") o.kernels = core::ScalerKernels::Fused;
  else if (c.scaler_kernels == "portable") o.kernels = core::ScalerKernels::Portable;
  return o;
}

// Fans module events out to several observers (profiler spans, dumps).
class ObserverList final : public core::ForwardObserver {
 public:
  explicit ObserverList(std::vector<core::ForwardObserver*> list) : list_(std::move(list)) {}
  void on_enter(const std::string& m) override {
    for (auto* o : list_) o->on_enter(m);
  }
  at::Tensor on_exit(const std::string& m, const at::Tensor& out) override {
    at::Tensor t = out;
    for (auto it = list_.rbegin(); it != list_.rend(); ++it) t = (*it)->on_exit(m, t);
    return t;
  }
  bool empty() const { return list_.empty(); }
  bool reads_outputs() const override {
    for (auto* o : list_)
      if (o->reads_outputs()) return true;
    return false;
  }

 private:
  std::vector<core::ForwardObserver*> list_;
};

[[noreturn]] void rethrow_as_oom(const TrainConfig& c, const std::string& device, const std::string& what) {
  throw std::runtime_error("out of memory on " + device + " with batch size " + std::to_string(c.batch_size) +
                           " (" + c.model + ", " + std::to_string(c.image_size) + "px, " + c.precision +
                           "): lower --batch-size, or use --precision bf16/fp16 to halve activation memory. " +
                           what.substr(0, what.find('\n')));
}

}  // namespace

void validate_config(const TrainConfig& c) {
  if (c.batch_size < 1) throw std::invalid_argument("--batch-size must be >= 1");
  if (c.image_size != 0 && c.image_size < 8) throw std::invalid_argument("--image-size must be >= 8");
  if (c.num_classes < 0) throw std::invalid_argument("--num-classes must be >= 1");
  if (c.steps < 1) throw std::invalid_argument("--steps must be >= 1");
  if (c.epochs < 0) throw std::invalid_argument("--epochs must be >= 0");
  if (c.epochs > 0 && c.data.empty()) throw std::invalid_argument("--epochs needs a dataset (--data KIND:PATH)");
  if (c.warmup_steps < 0 || (c.epochs == 0 && c.warmup_steps >= c.steps))
    throw std::invalid_argument("--warmup-steps must be >= 0 and less than --steps (" + std::to_string(c.steps) + ")");
  if (c.workers < 0) throw std::invalid_argument("--workers must be >= 0");
  if (c.eval_every_steps < 0 || c.eval_every_epochs < 0) throw std::invalid_argument("--eval-every must be >= 0");
  if (c.data.empty() && (c.eval_every_steps > 0 || c.eval_every_epochs > 0))
    throw std::invalid_argument("evaluation needs a dataset with a validation split (--data KIND:PATH)");
  if (c.label_smoothing < 0 || c.label_smoothing >= 1) throw std::invalid_argument("--label-smoothing must be in [0, 1)");
  if (c.clip_grad_norm < 0) throw std::invalid_argument("--clip-grad-norm must be >= 0");
  if (c.threads < 0) throw std::invalid_argument("--threads must be >= 0");
  if (c.scaler_kernels != "auto" && c.scaler_kernels != "fused" && c.scaler_kernels != "portable")
    throw std::invalid_argument("--scaler-kernels must be auto, fused or portable");
  if (c.optimizer_kernels != "auto" && c.optimizer_kernels != "fused" && c.optimizer_kernels != "foreach")
    throw std::invalid_argument("--optimizer-kernels must be auto, fused or foreach");
  core::optimizer_kind_from_name(c.optimizer);
  core::schedule_kind_from_name(c.schedule);
  parse_precision(c.precision);
  parse_loss_scale(c.loss_scale);
  if (c.cpu_allocator != "caching" && c.cpu_allocator != "system")
    throw std::invalid_argument("--cpu-allocator must be caching or system");
  validate_profile_options(c.profile);
  (void)core::model_names();
}

double effective_lr(const TrainConfig& c) {
  return c.lr >= 0 ? c.lr : 0.1 * static_cast<double>(c.batch_size) / 256.0;
}

TrainResult run_training(const TrainConfig& config, const TrainHooks& hooks) {
  validate_config(config);
  TrainConfig c = config;
  c.lr = effective_lr(config);
  std::ostream& msg = hooks.messages ? *hooks.messages : std::cerr;
  core::load_backend_libraries(c.backend_libs);
  if (c.threads > 0) at::set_num_threads(c.threads);
  auto dev = core::DeviceContext::open(c.device);
  if (dev.is_cpu()) {
    core::install_cpu_memory_tracking();
    core::set_cpu_block_caching(c.cpu_allocator == "caching");
  }
  const PrecisionPlan plan = plan_precision(c.precision, c.loss_scale, dev);
  apply_math_mode(plan, dev);

  TrainResult r;
  r.config = c;
  r.device = dev.name();
  r.device_description = dev.info().description;
  r.precision = c.precision;

  dev.synchronize();
  dev.reset_peak_memory();
  at::manual_seed(c.seed);

  // Real data decides the image size, the class count and (with --epochs) the step count.
  TrainData data;
  if (!c.data.empty() && !hooks.make_source) {
    data = open_train_data(c);
    if (c.num_classes == 0) c.num_classes = data.num_classes;
    if (c.num_classes < data.num_classes)
      throw std::invalid_argument("--num-classes " + std::to_string(c.num_classes) + " is less than the " +
                                  std::to_string(data.num_classes) + " classes of " + c.data);
    c.image_size = data.image_size;
    r.data = c.data;
    r.train_samples = static_cast<int64_t>(data.train->size());
  } else {
    r.data = "synthetic";
  }
  if (c.num_classes == 0) c.num_classes = 1000;
  if (c.image_size == 0) c.image_size = 224;

  core::ModelOptions mo;
  mo.num_classes = c.num_classes;
  mo.small_stem = c.small_stem;
  mo.base_width = c.base_width;
  mo.zero_init_residual = c.zero_init_residual;
  auto model = core::create_model(c.model, mo);
  if (!c.weights_in.empty()) core::load_weights(*model, c.weights_in);
  r.parameters = core::parameter_count(*model);
  r.gflops_per_image = 2.0 * static_cast<double>(core::forward_macs(c.model, mo, c.image_size)) / 1e9;

  try {
    model->to(dev.device());
    if (c.channels_last) core::to_channels_last(*model);
    model->train();
    std::unique_ptr<ProfileSession> profiler;
    std::vector<core::ForwardObserver*> observers = hooks.observers;
    for (auto* t : hooks.train_observers)
      if (auto* f = t->forward_observer()) observers.push_back(f);
    const auto& watchers = hooks.train_observers;
    // Gradients by state-dict name, only built when someone watches.
    auto named_grads = [&] {
      NamedTensors out;
      for (const auto& p : model->named_parameters())
        if (p.value().grad().defined()) out.emplace_back(p.key(), p.value().grad());
      return out;
    };
    if (!c.profile.dir.empty()) {
      profiler = std::make_unique<ProfileSession>(c.profile, dev.name());
      if (c.profile.module_spans) observers.insert(observers.begin(), profiler->module_observer());
      r.profile_recorder = profiler->recorder();
    }
    ObserverList observer_list(observers);
    model->set_observer(observer_list.empty() ? nullptr : &observer_list);

    std::unique_ptr<core::BatchSource> source;
    core::LoaderSource* loader = nullptr;
    std::unique_ptr<core::LoaderSource> val_source;
    if (hooks.make_source) {
      source = hooks.make_source(dev.name());
    } else if (data.train) {
      auto ls = make_loader_source(c, data.train, dev.device(), /*training=*/true);
      loader = ls.get();
      if (c.epochs > 0) c.steps = c.epochs * ls->batches_per_epoch();
      if (c.steps < 1) throw std::invalid_argument("the dataset holds less than one batch");
      if (c.warmup_steps >= c.steps) c.warmup_steps = std::max<int64_t>(0, c.steps - 1);
      if (c.eval_every_steps > 0 || c.eval_every_epochs > 0 || c.eval_at_end)
        val_source = make_loader_source(c, open_val_data(c, c.image_size), dev.device(), /*training=*/false);
      source = std::move(ls);
    } else {
      core::SyntheticOptions so;
      so.batch_size = c.batch_size;
      so.image_size = c.image_size;
      so.num_classes = c.num_classes;
      so.seed = c.seed;
      so.channels_last = c.channels_last;
      source = core::make_synthetic_source(so, dev.device());
    }

    core::OptimizerOptions oo;
    oo.lr = c.lr;
    oo.momentum = c.momentum;
    oo.nesterov = c.nesterov;
    if (c.optimizer_kernels == "fused") oo.kernels = core::OptimizerKernels::Fused;
    else if (c.optimizer_kernels == "foreach") oo.kernels = core::OptimizerKernels::ForEach;
    core::MultiTensorOptimizer optimizer(
        core::optimizer_kind_from_name(c.optimizer),
        core::split_decay_groups(model->named_parameters(), c.no_decay_bn_bias, c.weight_decay), oo);
    r.fused_optimizer = optimizer.uses_fused_kernels();

    core::LrSchedule schedule;
    schedule.kind = core::schedule_kind_from_name(c.schedule);
    schedule.base_lr = c.lr;
    schedule.warmup_steps = c.lr_warmup_steps;
    schedule.total_steps = c.steps;
    schedule.step_size = c.lr_step_size;
    schedule.gamma = c.lr_gamma;

    std::unique_ptr<core::GradScaler> scaler;
    if (plan.use_scaler) {
      scaler = std::make_unique<core::GradScaler>(dev.device(), scaler_options(c, plan), [&](const std::string& line) {
        msg << line << "\n";
        r.messages.push_back(line);
      });
      r.fused_scaler = scaler->uses_fused_kernels();
    }

    std::ofstream log;
    if (!c.log_path.empty()) {
      log.open(c.log_path, std::ios::trunc);
      if (!log) throw std::runtime_error("cannot write --log file " + c.log_path);
    }
    namespace F = torch::nn::functional;
    const auto ce = F::CrossEntropyFuncOptions().label_smoothing(c.label_smoothing);
    report::ProgressLine progress(c.progress && report::stderr_is_terminal());

    for (int64_t step = 0; step < c.steps; ++step) {
      if (profiler) profiler->step_begin(step);
      if (hooks.on_step_begin) hooks.on_step_begin(step);
      for (auto* w : watchers) w->on_step_begin(step);
      const auto t0 = Clock::now();
      core::Batch batch;
      {
        RECORD_USER_SCOPE("data_wait");
        batch = source->next();
      }
      const double data_wait_ms = ms_since(t0);
      optimizer.set_lr(schedule.lr(step));
      at::Tensor loss;
      {
        RECORD_USER_SCOPE("forward");
        core::AutocastGuard autocast(dev.device().type(), plan.autocast_dtype);
        at::Tensor logits = model->forward(batch.images);
        loss = F::cross_entropy(logits.to(at::kFloat), batch.labels, ce);
      }
      for (auto* w : watchers)
        w->on_loss(step, loss, scaler ? std::optional<double>(scaler->current_scale()) : std::nullopt);
      {
        RECORD_USER_SCOPE("backward");
        (scaler ? scaler->scale(loss) : loss).backward();
      }
      auto grads = optimizer.gradients();
      if (step == c.inject_inf_at_step && !grads.empty())
        grads.front().fill_(std::numeric_limits<float>::infinity());
      bool stepped = true;
      if (scaler) {
        if (!watchers.empty()) {
          const auto g = named_grads();
          for (auto* w : watchers) w->on_param_grads(step, /*scaled=*/true, g);
        }
        if (c.clip_grad_norm > 0 || !watchers.empty()) {
          RECORD_USER_SCOPE("scaler_unscale");
          scaler->unscale(grads);
        }
        if (!watchers.empty()) {
          const auto g = named_grads();
          for (auto* w : watchers) w->on_param_grads(step, /*scaled=*/false, g);
        }
        if (c.clip_grad_norm > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), c.clip_grad_norm);
        {
          RECORD_USER_SCOPE("optimizer_step");
          stepped = scaler->step(grads, [&] { optimizer.step(); });
        }
        RECORD_USER_SCOPE("scaler_update");
        scaler->update();
      } else {
        if (!watchers.empty()) {
          const auto g = named_grads();
          for (auto* w : watchers) w->on_param_grads(step, /*scaled=*/false, g);
        }
        RECORD_USER_SCOPE("optimizer_step");
        if (c.clip_grad_norm > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), c.clip_grad_norm);
        optimizer.step();
      }
      optimizer.zero_grad();
      const double loss_value = loss.item<double>();  // waits for the step's work
      dev.synchronize();
      StepRecord rec;
      rec.step = step;
      rec.loss = loss_value;
      rec.lr = optimizer.lr();
      rec.step_ms = ms_since(t0);
      rec.data_wait_ms = data_wait_ms;
      rec.skipped = !stepped;
      if (scaler) rec.loss_scale = scaler->current_scale();
      r.steps.push_back(rec);
      if (!std::isfinite(loss_value) && !scaler)
        throw std::runtime_error("loss is " + std::string(std::isnan(loss_value) ? "NaN" : "infinite") +
                                 " at step " + std::to_string(step) + " (" + c.precision +
                                 "); lower --lr, add --clip-grad-norm, or check the input data");
      if (log) {
        nlohmann::json j = {{"step", step}, {"loss", loss_value}, {"lr", rec.lr}, {"step_ms", rec.step_ms},
                            {"skipped", rec.skipped}};
        j["loss_scale"] = rec.loss_scale ? nlohmann::json(*rec.loss_scale) : nlohmann::json(nullptr);
        log << j.dump() << "\n" << std::flush;
      }
      if (profiler) profiler->step_end(step);
      if (val_source) {
        const int64_t done = step + 1, per_epoch = loader->batches_per_epoch();
        const bool at_steps = c.eval_every_steps > 0 && done % c.eval_every_steps == 0;
        const bool at_epochs = c.eval_every_epochs > 0 && done % (c.eval_every_epochs * per_epoch) == 0;
        const bool at_end = c.eval_at_end && done == c.steps;
        if (at_steps || at_epochs || at_end) {
          progress.clear();
          EvalRecord e = evaluate(model, *val_source, plan, dev.device());
          e.step = done;
          e.epoch = static_cast<double>(done) / static_cast<double>(per_epoch);
          r.evals.push_back(e);
          msg << "eval after step " << done << " (epoch " << report::format_fixed(e.epoch, 2) << "): top-1 "
              << report::format_percent(e.top1, 2) << ", top-5 " << report::format_percent(e.top5, 2) << ", loss "
              << report::format_fixed(e.loss, 4) << " on " << e.samples << " samples" << std::endl;
        }
      }
      if (hooks.on_step_end) hooks.on_step_end(rec);
      for (auto* w : watchers) w->on_step_end(rec);
      progress.update("step " + std::to_string(step + 1) + "/" + std::to_string(c.steps) + "  loss " +
                      report::format_fixed(loss_value, 4) + "  " + report::format_ms(rec.step_ms));
    }
    progress.clear();
    if (loader) {
      // Left out when the dataset was opened, then met while decoding.
      for (const auto& b : data.train->skipped()) r.first_bad.push_back(b.where + ": " + b.reason);
      auto st = loader->stats();
      r.bad_samples = static_cast<int64_t>(data.train->skipped().size()) + st.bad_samples;
      for (const auto& b : st.first_bad) r.first_bad.push_back(b.where + ": " + b.reason);
      if (r.first_bad.size() > 5) r.first_bad.resize(5);
    }
    if (scaler) {
      r.skipped_steps = scaler->state().skipped_steps;
      r.final_loss_scale = scaler->current_scale();
    }
    model->set_observer(nullptr);
    if (profiler) {
      profiler->finish();
      r.profile_traces = profiler->traces_written();
    }
    if (!c.weights_out.empty()) core::save_weights(*model, c.weights_out);
  } catch (const c10::OutOfMemoryError& e) {
    rethrow_as_oom(c, dev.name(), e.what());
  } catch (const std::bad_alloc& e) {
    rethrow_as_oom(c, dev.name(), "host allocation failed");
  } catch (const c10::Error& e) {
    const std::string what = e.what();
    if (what.find("can't allocate memory") != std::string::npos || what.find("out of memory") != std::string::npos)
      rethrow_as_oom(c, dev.name(), what);
    throw std::runtime_error(what.substr(0, what.find("\nException raised from")));
  }

  r.config = c;  // as resolved: image size, classes, steps from epochs, learning rate
  dev.synchronize();
  const auto mem = dev.memory();
  r.peak_memory_bytes = mem.peak_bytes;
  if (dev.is_cpu()) r.peak_rss_bytes = core::process_peak_rss_bytes();
  r.first_step_ms = r.steps.front().step_ms;
  std::vector<double> measured;
  double wait_total = 0;
  for (const auto& s : r.steps)
    if (s.step >= c.warmup_steps) {
      measured.push_back(s.step_ms);
      wait_total += s.data_wait_ms;
    }
  const auto stats = core::summarize_step_times(measured);
  r.measured_steps = static_cast<int64_t>(measured.size());
  r.batch_time_ms_median = stats.median_ms;
  r.batch_time_ms_p90 = stats.p90_ms;
  r.throughput_img_s = stats.total_ms > 0 ? static_cast<double>(c.batch_size * r.measured_steps) / (stats.total_ms / 1e3) : 0;
  r.final_loss = r.steps.back().loss;
  if (!measured.empty()) r.data_wait_ms_mean = wait_total / static_cast<double>(measured.size());
  if (stats.total_ms > 0) r.data_wait_share = wait_total / stats.total_ms;
  // Training costs about three forward passes (forward, and backward for inputs and weights).
  r.achieved_tflops = 3.0 * r.gflops_per_image * r.throughput_img_s / 1e3;
  r.peak_tflops = c.peak_tflops;
  if (!r.peak_tflops && c.probe_peak) r.peak_tflops = probe_peak_tflops(plan, dev);
  if (r.peak_tflops && *r.peak_tflops > 0) r.utilization = r.achieved_tflops / *r.peak_tflops;
  return r;
}

}  // namespace crosstrain::tools
