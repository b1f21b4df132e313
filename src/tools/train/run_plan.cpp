#include "tools/train/run_plan.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/models.h"
#include "tools/train/train.h"

namespace crosstrain::train {

namespace {

constexpr int64_t kDefaultWarmupSteps = 3;

template <typename Enum>
Enum pick(const std::string& flag, const std::string& value, std::initializer_list<std::pair<const char*, Enum>> table) {
  std::string valid;
  for (const auto& [name, e] : table) {
    if (value == name) return e;
    valid += (valid.empty() ? "" : ", ") + std::string(name);
  }
  throw std::invalid_argument(flag + " must be one of " + valid + " (got '" + value + "')");
}

void check_finite(double v, const char* flag) {
  if (!std::isfinite(v)) throw std::invalid_argument(std::string(flag) + " must be a finite number");
}

// "--batch-size must be between 1 and 65536 (got 0)": the same words as the flags' checks.
void check_range(int64_t v, int64_t lo, int64_t hi, const char* flag) {
  if (v < lo || v > hi)
    throw std::invalid_argument(std::string(flag) + " must be between " + std::to_string(lo) + " and " +
                                std::to_string(hi) + " (got " + std::to_string(v) + ")");
}

void check_real(double v, double lo, double hi, const char* flag) {
  check_finite(v, flag);
  if (v < lo || v > hi) {
    std::ostringstream msg;
    msg << flag << " must be between " << lo << " and " << hi << " (got " << v << ")";
    throw std::invalid_argument(msg.str());
  }
}

}  // namespace

void validate_config(const TrainConfig& c) {
  using namespace limits;
  check_range(c.batch_size, 1, kMaxBatchSize, "--batch-size");
  if (c.image_size != 0) check_range(c.image_size, kMinImageSize, kMaxImageSize, "--image-size");
  if (c.num_classes != 0) check_range(c.num_classes, 1, kMaxNumClasses, "--num-classes");
  check_range(c.base_width, kMinBaseWidth, kMaxBaseWidth, "--base-width");
  check_range(c.steps, 1, kMaxSteps, "--steps");
  check_range(c.epochs, 0, kMaxSteps, "--epochs");
  if (c.warmup_steps >= 0) check_range(c.warmup_steps, 0, kMaxSteps, "--warmup-steps");
  check_range(c.threads, 0, kMaxThreads, "--threads");
  check_range(c.workers, 0, kMaxThreads, "--workers");
  check_range(c.prefetch, 0, kMaxPrefetch, "--prefetch");
  check_range(c.max_samples, 0, kMaxSamples, "--max-samples");
  check_range(c.val_max_samples, 0, kMaxSamples, "--val-max-samples");
  check_range(c.world_size, 1, kMaxWorldSize, "--world-size");
  check_range(c.rank, 0, c.world_size - 1, "--rank");
  check_range(c.eval_every_steps, 0, kMaxSteps, "--eval-every");
  check_range(c.eval_every_epochs, 0, kMaxSteps, "--eval-every-epochs");
  check_range(c.scale_growth_interval, 1, kMaxSteps, "--scale-growth-interval");
  check_range(c.lr_warmup_steps, 0, kMaxSteps, "--lr-warmup-steps");
  check_range(c.lr_step_size, 1, kMaxSteps, "--lr-step-size");
  check_range(c.checkpoint_every, 0, kMaxSteps, "--checkpoint-every");
  check_range(c.checkpoint_every_epochs, 0, kMaxSteps, "--checkpoint-every-epochs");
  check_range(c.checkpoint_keep, 1, kMaxSteps, "--checkpoint-keep");
  if (c.lr >= 0 || !std::isfinite(c.lr)) check_real(c.lr, 0, kMaxReal, "--lr");
  check_real(c.momentum, 0, kMaxReal, "--momentum");
  check_real(c.weight_decay, 0, kMaxReal, "--weight-decay");
  check_real(c.lr_gamma, 0, kMaxReal, "--lr-gamma");
  check_real(c.clip_grad_norm, 0, kMaxReal, "--clip-grad-norm");
  check_real(c.min_crop_scale, 0.01, 1.0, "--min-crop-scale");
  check_finite(c.label_smoothing, "--label-smoothing");
  if (c.label_smoothing < 0 || c.label_smoothing >= 1) throw std::invalid_argument("--label-smoothing must be in [0, 1)");
  if (c.peak_tflops) check_real(*c.peak_tflops, 1e-3, kMaxReal, "--peak-tflops");
  if (c.epochs > 0 && c.data.empty()) throw std::invalid_argument("--epochs needs a dataset (--data KIND:PATH)");
  if (c.epochs == 0 && c.warmup_steps >= c.steps)
    throw std::invalid_argument("--warmup-steps must be less than --steps (" + std::to_string(c.steps) + ")");
  if (c.data.empty() && (c.eval_every_steps > 0 || c.eval_every_epochs > 0))
    throw std::invalid_argument("evaluation needs a dataset with a validation split (--data KIND:PATH)");
  check_range(c.accumulate_steps, 1, 65536, "--accumulate-steps");
  check_real(c.dist_timeout_s, 1, 86400, "--dist-timeout");
  check_real(c.bucket_cap_mb, 0.001, 4096, "--bucket-cap-mb");
  pick<int>("--grad-compression", c.grad_compression, {{"none", 0}, {"fp16", 1}, {"bf16", 2}});
  if (c.checkpoint_dir.empty() && (c.checkpoint_every > 0 || c.checkpoint_every_epochs > 0))
    throw std::invalid_argument("--checkpoint-every needs --checkpoint-dir");
  if (c.resume == "auto" && c.checkpoint_dir.empty()) throw std::invalid_argument("--resume auto needs --checkpoint-dir");
  if (c.checkpoint_every_epochs > 0 && c.data.empty())
    throw std::invalid_argument("--checkpoint-every-epochs needs a dataset (--data KIND:PATH)");
  pick<core::ScalerKernels>("--scaler-kernels", c.scaler_kernels,
                            {{"auto", core::ScalerKernels::Auto}, {"fused", core::ScalerKernels::Fused},
                             {"portable", core::ScalerKernels::Portable}});
  pick<core::OptimizerKernels>("--optimizer-kernels", c.optimizer_kernels,
                               {{"auto", core::OptimizerKernels::Auto}, {"fused", core::OptimizerKernels::Fused},
                                {"foreach", core::OptimizerKernels::ForEach}});
  core::optimizer_kind_from_name(c.optimizer);
  core::schedule_kind_from_name(c.schedule);
  parse_precision(c.precision);
  parse_loss_scale(c.loss_scale);
  pick<CpuAllocator>("--cpu-allocator", c.cpu_allocator,
                     {{"caching", CpuAllocator::Caching}, {"system", CpuAllocator::System}});
  profile::validate_profile_options(c.profile);
  (void)core::model_names();
}

int64_t global_batch(const TrainConfig& c) { return c.batch_size * c.accumulate_steps * c.world_size; }

void check_threads_fit_machine(const TrainConfig& c) {
  const unsigned hardware = std::thread::hardware_concurrency();
  if (hardware > 0 && c.threads > static_cast<int64_t>(hardware))
    throw std::invalid_argument("--threads " + std::to_string(c.threads) + " is more than the " +
                                std::to_string(hardware) + " hardware threads of this machine");
}

double effective_lr(const TrainConfig& c) {
  return c.lr >= 0 ? c.lr : 0.1 * static_cast<double>(global_batch(c)) / 256.0;
}

int64_t fit_default_warmup(int64_t preferred, int64_t steps, std::vector<std::string>& notes) {
  const int64_t fitted = std::max<int64_t>(0, std::min(preferred, steps - 1));
  if (fitted < preferred)
    notes.push_back("timing warm-up lowered from " + std::to_string(preferred) + " to " + std::to_string(fitted) +
                    " steps to fit " + std::to_string(steps) + " steps");
  return fitted;
}

void fit_profile_schedule(profile::ProfileOptions& o, int64_t steps, bool explicit_fits, std::vector<std::string>& notes) {
  if (o.wait + o.warmup < steps) return;
  const int64_t wait = o.wait, warmup = o.warmup;
  const profile::ProfileOptions defaults;
  if (explicit_fits && (o.wait != defaults.wait || o.warmup != defaults.warmup))
    throw std::invalid_argument("--profile-wait " + std::to_string(wait) + " and --profile-warmup " +
                                std::to_string(warmup) + " leave no step of " + std::to_string(steps) +
                                " to record: lower them or raise --steps");
  // One step is recorded: the profiler's warm-up goes first, the skipped first steps last (step 0
  // carries one-time allocation and kernel selection).
  const int64_t excess = o.wait + o.warmup - (steps - 1);
  const int64_t cut = std::min(excess, o.warmup);
  o.warmup -= cut;
  o.wait -= excess - cut;
  notes.push_back("profiler schedule lowered from wait " + std::to_string(wait) + ", warm-up " + std::to_string(warmup) +
                  " to wait " + std::to_string(o.wait) + ", warm-up " + std::to_string(o.warmup) +
                  " steps so that " + std::to_string(steps) + " steps record a trace");
}

int64_t steps_per_epoch(const TrainConfig& c, const DataFacts& data) {
  return data.batches_per_epoch / std::max<int64_t>(1, c.accumulate_steps);
}

RunPlan resolve(const TrainConfig& asked, const core::DeviceContext& device, const std::optional<DataFacts>& data) {
  validate_config(asked);
  RunPlan p;
  p.asked = asked;
  TrainConfig& c = p.resolved;
  c = asked;
  c.lr = effective_lr(asked);
  if (data) {
    if (c.num_classes == 0) c.num_classes = data->num_classes;
    if (c.num_classes < data->num_classes)
      throw std::invalid_argument("--num-classes " + std::to_string(c.num_classes) + " is less than the " +
                                  std::to_string(data->num_classes) + " classes of " + c.data);
    c.image_size = data->image_size;
    if (data->batches_per_epoch < c.accumulate_steps)
      throw std::invalid_argument("an epoch of " + c.data + " holds " + std::to_string(data->batches_per_epoch) +
                                  " batches per rank, fewer than --accumulate-steps " + std::to_string(c.accumulate_steps));
    if (c.epochs > 0) c.steps = c.epochs * steps_per_epoch(c, *data);
    if (c.steps < 1) throw std::invalid_argument("the dataset holds less than one batch");
    if (!data->has_val_split) {
      if (c.eval_every_steps > 0 || c.eval_every_epochs > 0)
        throw std::invalid_argument(c.data + " has no validation split for --eval-every; give --val-root");
      if (c.eval_at_end) {
        c.eval_at_end = false;
        p.notes.push_back("no validation split in " + c.data + ": final evaluation skipped (give --val-root DIR)");
      }
    }
  }
  if (c.num_classes == 0) c.num_classes = 1000;
  if (c.image_size == 0) c.image_size = 224;
  if (asked.warmup_steps < 0) {
    c.warmup_steps = fit_default_warmup(kDefaultWarmupSteps, c.steps, p.notes);
  } else if (c.warmup_steps >= c.steps) {
    // Only reachable with --epochs: the step count was not known when the flag was given.
    const int64_t lowered = std::max<int64_t>(0, c.steps - 1);
    p.notes.push_back("--warmup-steps " + std::to_string(c.warmup_steps) + " lowered to " + std::to_string(lowered) +
                      " to fit " + std::to_string(c.steps) + " steps");
    c.warmup_steps = lowered;
  }
  // With --epochs the step count was not known when the flags were given: lowered, not refused.
  if (!c.profile.dir.empty()) fit_profile_schedule(c.profile, c.steps, /*explicit_fits=*/c.epochs == 0, p.notes);
  p.precision = plan_precision(c.precision, c.loss_scale, device);
  if (!p.precision.emulation_note.empty()) p.notes.push_back(p.precision.emulation_note);
  p.optimizer = core::optimizer_kind_from_name(c.optimizer);
  p.schedule = core::schedule_kind_from_name(c.schedule);
  p.optimizer_kernels = c.optimizer_kernels == "fused"     ? core::OptimizerKernels::Fused
                        : c.optimizer_kernels == "foreach" ? core::OptimizerKernels::ForEach
                                                           : core::OptimizerKernels::Auto;
  p.scaler_kernels = c.scaler_kernels == "fused"      ? core::ScalerKernels::Fused
                     : c.scaler_kernels == "portable" ? core::ScalerKernels::Portable
                                                      : core::ScalerKernels::Auto;
  p.cpu_allocator = c.cpu_allocator == "system" ? CpuAllocator::System : CpuAllocator::Caching;
  p.profile_recorder = c.profile.recorder == "kineto"     ? ProfileRecorder::Kineto
                       : c.profile.recorder == "portable" ? ProfileRecorder::Portable
                                                          : ProfileRecorder::Auto;
  return p;
}

core::ModelOptions model_options(const TrainConfig& c) {
  core::ModelOptions o;
  o.num_classes = c.num_classes;
  o.small_stem = c.small_stem;
  o.base_width = c.base_width;
  o.zero_init_residual = c.zero_init_residual;
  return o;
}

core::SyntheticOptions synthetic_options(const TrainConfig& c) {
  core::SyntheticOptions o;
  o.batch_size = c.batch_size;
  o.image_size = c.image_size;
  o.num_classes = c.num_classes;
  o.seed = c.seed + static_cast<uint64_t>(c.rank);  // ranks see different synthetic batches
  o.channels_last = c.channels_last;
  return o;
}

core::GradScalerOptions scaler_options(const RunPlan& p) {
  core::GradScalerOptions o;
  o.growth_interval = p.resolved.scale_growth_interval;
  if (p.precision.static_scale) {
    o.dynamic = false;
    o.init_scale = *p.precision.static_scale;
  }
  o.kernels = p.scaler_kernels;
  return o;
}

core::OptimizerOptions optimizer_options(const RunPlan& p) {
  core::OptimizerOptions o;
  o.lr = p.resolved.lr;
  o.momentum = p.resolved.momentum;
  o.nesterov = p.resolved.nesterov;
  o.kernels = p.optimizer_kernels;
  return o;
}

core::LrSchedule lr_schedule(const RunPlan& p) {
  core::LrSchedule s;
  s.kind = p.schedule;
  s.base_lr = p.resolved.lr;
  s.warmup_steps = p.resolved.lr_warmup_steps;
  s.total_steps = p.resolved.steps;
  s.step_size = p.resolved.lr_step_size;
  s.gamma = p.resolved.lr_gamma;
  return s;
}

}  // namespace crosstrain::train
