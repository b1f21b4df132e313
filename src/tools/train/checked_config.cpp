#include "tools/train/checked_config.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/amp.h"
#include "core/data/jpeg_cache.h"
#include "core/models.h"
#include "core/optim.h"
#include "tools/train/precision.h"

namespace crosstrain::train {

namespace {

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

// Every number in its range (train_config.h's limits).
void check_ranges(const TrainConfig& c) {
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
  check_range(c.accumulate_steps, 1, 65536, "--accumulate-steps");
  check_real(c.dist_timeout_s, 1, 86400, "--dist-timeout");
  check_real(c.bucket_cap_mb, 0.001, 4096, "--bucket-cap-mb");
}

// Flag combinations and names.
void check_combinations_and_names(const TrainConfig& c) {
  if (c.epochs > 0 && c.data.empty()) throw std::invalid_argument("--epochs needs a dataset (--data KIND:PATH)");
  data::check_jpeg_cache_use(c.data, c.jpeg_cache);
  if (c.epochs == 0 && c.warmup_steps >= c.steps)
    throw std::invalid_argument("--warmup-steps must be less than --steps (" + std::to_string(c.steps) + ")");
  if (c.data.empty() && (c.eval_every_steps > 0 || c.eval_every_epochs > 0))
    throw std::invalid_argument("evaluation needs a dataset with a validation split (--data KIND:PATH)");
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
  pick<int>("--cpu-allocator", c.cpu_allocator, {{"caching", 0}, {"system", 1}});
  profile::validate_profile_options(c.profile);
  (void)core::model_names();
}

// OpenMP's spinning workers make an oversubscribed run crawl (10000 threads never finish a step).
void check_threads_fit_machine(const TrainConfig& c) {
  const unsigned hardware = std::thread::hardware_concurrency();
  if (hardware > 0 && c.threads > static_cast<int64_t>(hardware))
    throw std::invalid_argument("--threads " + std::to_string(c.threads) + " is more than the " +
                                std::to_string(hardware) + " hardware threads of this machine");
}

// What needs a process group, or one process: said before the group is joined.
void check_group(const TrainConfig& c, const std::optional<dist::WorkerEnv>& workers) {
  if (c.sync_bn && !workers)
    throw std::invalid_argument(
        "--sync-bn needs a process group: run under torchrun or crosstrain launch, or add --distributed");
  if (workers && workers->world_size > 1 && !c.drop_last)
    throw std::invalid_argument(
        "--keep-last cannot be used with more than one rank: every rank must take as many steps");
}

std::optional<dist::WorkerEnv> group_to_join(const TrainConfig& c, const std::optional<dist::WorkerEnv>& launched) {
  if (launched || !c.distributed) return launched;
  dist::WorkerEnv single = dist::WorkerEnv::single();
  single.master_port = 0;  // a store of its own, on any free port
  return single;
}

TrainConfig placed_in_group(const TrainConfig& c, const std::optional<dist::WorkerEnv>& workers) {
  TrainConfig p = c;
  if (!workers) return p;
  p.rank = workers->rank;
  p.world_size = workers->world_size;
  p.distributed = true;
  p.profile.rank = p.rank;  // DIR/cycle<k>/rank<r>.pt.trace.json, as `run --profile` names them
  return p;
}

}  // namespace

CheckedConfig check_config(const TrainConfig& config, const std::optional<dist::WorkerEnv>& launched) {
  CheckedConfig checked;
  checked.requested_ = config;
  checked.workers_ = group_to_join(config, launched);
  checked.config_ = placed_in_group(config, checked.workers_);
  check_ranges(checked.config_);
  check_combinations_and_names(checked.config_);
  check_threads_fit_machine(checked.config_);
  check_group(checked.config_, checked.workers_);
  return checked;
}

}  // namespace crosstrain::train
