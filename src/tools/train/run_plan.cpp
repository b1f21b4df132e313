#include "tools/train/run_plan.h"

#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "tools/train/model_catalog.h"
#include "tools/train/train.h"

namespace crosstrain::train {

namespace {

constexpr int64_t kDefaultWarmupSteps = 3;

// Weights, gradients and optimizer state alone must fit in the machine's memory (activations come
// on top): otherwise building the model grows the process until the kernel kills it.
void check_model_fits_in_memory(const TrainConfig& c) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;
  const double memory = static_cast<double>(pages) * static_cast<double>(page);
  const double params = static_cast<double>(estimate_parameters(c.model, c.num_classes, c.small_stem, c.base_width));
  const double copies = 2 + (c.optimizer == "adamw" ? 2 : (c.momentum > 0 ? 1 : 0));
  const double bytes = params * 4 * copies;
  if (bytes <= memory) return;
  std::ostringstream msg;
  msg.precision(3);
  msg << c.model << " with --base-width " << c.base_width << " and " << c.num_classes << " classes has "
      << params / 1e9 << " billion parameters: " << bytes / 1e9 << " GB for weights, gradients and optimizer state, "
      << "more than the " << memory / 1e9 << " GB of memory of this machine; lower --base-width or --num-classes";
  throw std::invalid_argument(msg.str());
}

}  // namespace

int64_t global_batch(const TrainConfig& c) { return c.batch_size * c.accumulate_steps * c.world_size; }

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

namespace {

// The dataset decides the class count (unless given), the image size and, with --epochs, the steps.
void fit_to_data(RunPlan& p, const DataFacts& data) {
  TrainConfig& c = p.resolved;
  if (c.num_classes == 0) c.num_classes = data.num_classes;
  if (c.num_classes < data.num_classes)
    throw std::invalid_argument("--num-classes " + std::to_string(c.num_classes) + " is less than the " +
                                std::to_string(data.num_classes) + " classes of " + c.data);
  c.image_size = data.image_size;
  if (data.batches_per_epoch < c.accumulate_steps)
    throw std::invalid_argument("an epoch of " + c.data + " holds " + std::to_string(data.batches_per_epoch) +
                                " batches per rank, fewer than --accumulate-steps " + std::to_string(c.accumulate_steps));
  if (c.epochs > 0) c.steps = c.epochs * steps_per_epoch(c, data);
  if (c.steps < 1) throw std::invalid_argument("the dataset holds less than one batch");
  if (!data.has_val_split) {
    if (c.eval_every_steps > 0 || c.eval_every_epochs > 0)
      throw std::invalid_argument(c.data + " has no validation split for --eval-every; give --val-root");
    if (c.eval_at_end) {
      c.eval_at_end = false;
      p.notes.push_back("no validation split in " + c.data + ": final evaluation skipped (give --val-root DIR)");
    }
  }
}

void fit_warmup(RunPlan& p) {
  TrainConfig& c = p.resolved;
  if (p.asked.warmup_steps < 0) {
    c.warmup_steps = fit_default_warmup(kDefaultWarmupSteps, c.steps, p.notes);
  } else if (c.warmup_steps >= c.steps) {
    // Only reachable with --epochs: the step count was not known when the flag was given.
    const int64_t lowered = std::max<int64_t>(0, c.steps - 1);
    p.notes.push_back("--warmup-steps " + std::to_string(c.warmup_steps) + " lowered to " + std::to_string(lowered) +
                      " to fit " + std::to_string(c.steps) + " steps");
    c.warmup_steps = lowered;
  }
}

// The names the check accepted, as the parts' enums.
void name_kinds(RunPlan& p) {
  const TrainConfig& c = p.resolved;
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
}

}  // namespace

RunPlan resolve(const CheckedConfig& checked, const core::DeviceContext& device, const std::optional<DataFacts>& data) {
  RunPlan p;
  p.asked = checked.config();
  TrainConfig& c = p.resolved;
  c = p.asked;
  c.lr = effective_lr(p.asked);
  if (data) fit_to_data(p, *data);
  if (c.num_classes == 0) c.num_classes = 1000;
  if (c.image_size == 0) c.image_size = 224;
  fit_warmup(p);
  // With --epochs the step count was not known when the flags were given: lowered, not refused.
  if (!c.profile.dir.empty()) fit_profile_schedule(c.profile, c.steps, /*explicit_fits=*/c.epochs == 0, p.notes);
  p.precision = plan_precision(c.precision, c.loss_scale, device);
  if (!p.precision.emulation_note.empty()) p.notes.push_back(p.precision.emulation_note);
  name_kinds(p);
  if (device.is_cpu()) check_model_fits_in_memory(c);
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
