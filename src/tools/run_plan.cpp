#include "tools/run_plan.h"

#include <cmath>
#include <stdexcept>

#include "core/models.h"
#include "tools/train.h"

namespace crosstrain::tools {

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

}  // namespace

void validate_config(const TrainConfig& c) {
  if (c.batch_size < 1) throw std::invalid_argument("--batch-size must be >= 1");
  if (c.image_size != 0 && c.image_size < 8) throw std::invalid_argument("--image-size must be >= 8");
  if (c.num_classes < 0) throw std::invalid_argument("--num-classes must be >= 1");
  if (c.steps < 1) throw std::invalid_argument("--steps must be >= 1");
  if (c.epochs < 0) throw std::invalid_argument("--epochs must be >= 0");
  if (c.epochs > 0 && c.data.empty()) throw std::invalid_argument("--epochs needs a dataset (--data KIND:PATH)");
  if (c.epochs == 0 && c.warmup_steps >= c.steps)
    throw std::invalid_argument("--warmup-steps must be less than --steps (" + std::to_string(c.steps) + ")");
  if (c.workers < 0) throw std::invalid_argument("--workers must be >= 0");
  if (c.eval_every_steps < 0 || c.eval_every_epochs < 0) throw std::invalid_argument("--eval-every must be >= 0");
  if (c.data.empty() && (c.eval_every_steps > 0 || c.eval_every_epochs > 0))
    throw std::invalid_argument("evaluation needs a dataset with a validation split (--data KIND:PATH)");
  check_finite(c.lr, "--lr");
  check_finite(c.momentum, "--momentum");
  check_finite(c.weight_decay, "--weight-decay");
  check_finite(c.clip_grad_norm, "--clip-grad-norm");
  check_finite(c.label_smoothing, "--label-smoothing");
  if (c.momentum < 0) throw std::invalid_argument("--momentum must be >= 0");
  if (c.weight_decay < 0) throw std::invalid_argument("--weight-decay must be >= 0");
  if (c.label_smoothing < 0 || c.label_smoothing >= 1) throw std::invalid_argument("--label-smoothing must be in [0, 1)");
  if (c.clip_grad_norm < 0) throw std::invalid_argument("--clip-grad-norm must be >= 0");
  if (c.threads < 0) throw std::invalid_argument("--threads must be >= 0");
  if (c.accumulate_steps < 1) throw std::invalid_argument("--accumulate-steps must be >= 1");
  if (c.world_size < 1 || c.rank < 0 || c.rank >= c.world_size) throw std::invalid_argument("rank outside the world size");
  if (!(c.dist_timeout_s >= 1)) throw std::invalid_argument("--dist-timeout must be >= 1 second");
  if (!(c.bucket_cap_mb > 0) || !std::isfinite(c.bucket_cap_mb)) throw std::invalid_argument("--bucket-cap-mb must be > 0");
  pick<int>("--grad-compression", c.grad_compression, {{"none", 0}, {"fp16", 1}, {"bf16", 2}});
  if (c.checkpoint_every < 0 || c.checkpoint_every_epochs < 0)
    throw std::invalid_argument("--checkpoint-every must be >= 0");
  if (c.checkpoint_keep < 1) throw std::invalid_argument("--checkpoint-keep must be >= 1");
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

double effective_lr(const TrainConfig& c) {
  return c.lr >= 0 ? c.lr : 0.1 * static_cast<double>(global_batch(c)) / 256.0;
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
    c.warmup_steps = std::min(kDefaultWarmupSteps, c.steps - 1);
    if (c.warmup_steps < kDefaultWarmupSteps)
      p.notes.push_back("timing warm-up lowered from " + std::to_string(kDefaultWarmupSteps) + " to " +
                        std::to_string(c.warmup_steps) + " steps to fit " + std::to_string(c.steps) + " steps");
  } else if (c.warmup_steps >= c.steps) {
    // Only reachable with --epochs: the step count was not known when the flag was given.
    const int64_t lowered = std::max<int64_t>(0, c.steps - 1);
    p.notes.push_back("--warmup-steps " + std::to_string(c.warmup_steps) + " lowered to " + std::to_string(lowered) +
                      " to fit " + std::to_string(c.steps) + " steps");
    c.warmup_steps = lowered;
  }
  p.precision = plan_precision(c.precision, c.loss_scale, device);
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

}  // namespace crosstrain::tools
