#include "tools/train/train.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>

#include "core/batch_source.h"
#include "core/cpu_allocator.h"
#include "core/device.h"
#include "core/data/jpeg_cache.h"
#include "core/models.h"
#include "report/terminal.h"
#include "tools/train/precision.h"
#include "tools/train/train_data.h"
#include "tools/train/checkpoint.h"
#include "tools/train/checkpoint_lock.h"
#include "tools/dist/data_parallel.h"
#include "tools/dist/group.h"
#include "tools/dist/sync_batch_norm.h"
#include "tools/train/run_plan.h"
#include "tools/train/train_observers.h"
#include "tools/train/trainer.h"

namespace crosstrain::train {

namespace {

[[noreturn]] void rethrow_as_oom(const TrainConfig& c, const std::string& device, const std::string& what) {
  throw std::runtime_error("out of memory on " + device + " with batch size " + std::to_string(c.batch_size) +
                           " (" + c.model + ", " + std::to_string(c.image_size) + "px, " + c.precision +
                           "): lower --batch-size, or use --precision bf16/fp16 to halve activation memory. " +
                           what.substr(0, what.find('\n')));
}

// The training split of --data behind the threaded loader, and what it decides about the run.
struct OpenedData {
  TrainData data;
  std::unique_ptr<core::LoaderSource> loader;
  std::optional<DataFacts> facts;
};

OpenedData open_data(const TrainConfig& c, const TrainHooks& hooks, c10::Device device) {
  OpenedData d;
  if (c.data.empty() || hooks.make_source) return d;
  d.data = open_train_data(c);
  d.loader = make_loader_source(c, d.data.train, device, /*training=*/true);
  DataFacts f;
  f.num_classes = d.data.num_classes;
  f.image_size = d.data.image_size;
  f.batches_per_epoch = d.loader->batches_per_epoch();
  f.train_samples = static_cast<int64_t>(d.data.train->size());
  f.has_val_split = data_has_val_split(c);
  d.facts = f;
  return d;
}

std::unique_ptr<core::BatchSource> make_source(const TrainConfig& c, const TrainHooks& hooks, OpenedData& data,
                                               c10::Device device, const std::string& device_name) {
  if (hooks.make_source) return hooks.make_source(device_name);
  if (data.loader) return std::move(data.loader);
  return core::make_synthetic_source(synthetic_options(c), device);
}

std::unique_ptr<EvalObserver> make_evaluation(const RunPlan& plan, const OpenedData& data, core::TrainableModel& model,
                                              c10::Device device, std::ostream& msg, report::ProgressLine& progress,
                                              dist::GradientSync* sync) {
  const TrainConfig& c = plan.resolved;
  if (!data.facts || !(c.eval_every_steps > 0 || c.eval_every_epochs > 0 || c.eval_at_end)) return nullptr;
  EvalObserver::Schedule s;
  s.every_steps = c.eval_every_steps;
  s.every_epochs = c.eval_every_epochs;
  s.at_end = c.eval_at_end;
  s.total_steps = c.steps;
  s.batches_per_epoch = steps_per_epoch(c, *data.facts);
  auto val_data = open_val_data(c, c.image_size);
  // What the validation split left out (a class folder the training root lacks, an empty one).
  const auto& skipped = val_data->skipped();
  for (size_t i = 0; i < skipped.size() && i < 5; ++i)
    msg << "note: validation data: " << skipped[i].where << ": " << skipped[i].reason << "\n";
  if (skipped.size() > 5) msg << "note: validation data: " << skipped.size() - 5 << " more item(s) left out\n";
  auto val = make_loader_source(c, std::move(val_data), device, /*training=*/false);
  auto eval = std::make_unique<EvalObserver>(model, std::move(val), plan.precision, device, s, msg, progress);
  if (sync && sync->world_size() > 1)
    eval->set_combine([sync](EvalRecord& e) {  // each rank evaluated its shard: weight by samples
      const double n = static_cast<double>(e.samples);
      auto m = sync->mean_over_ranks({e.top1 * n, e.top5 * n, e.loss * n, n}, "combining the evaluation");
      const double total = m[3] * sync->world_size();
      e.samples = static_cast<int64_t>(std::llround(total));
      if (m[3] > 0) {
        e.top1 = m[0] / m[3];
        e.top5 = m[1] / m[3];
        e.loss = m[2] / m[3];
      }
    });
  return eval;
}

// What the data gave trouble with: bad samples skipped, progressive JPEGs decoded whole.
void report_data_findings(const OpenedData& data, const core::BatchSource& source, TrainResult& r) {
  if (!data.facts) return;
  const auto* loader = dynamic_cast<const core::LoaderSource*>(&source);
  // Left out when the dataset was opened, then met while decoding.
  for (const auto& b : data.data.train->skipped()) r.first_bad.push_back(b.where + ": " + b.reason);
  r.bad_samples = data.data.train->skipped_samples();
  if (loader) {
    auto st = loader->stats();
    r.bad_samples += st.bad_samples;
    for (const auto& b : st.first_bad) r.first_bad.push_back(b.where + ": " + b.reason);
  }
  if (r.first_bad.size() > 5) r.first_bad.resize(5);
  const std::string progressive = data::progressive_jpeg_note(data.data.train->progressive_jpeg_reads());
  if (!progressive.empty()) r.notes.push_back(progressive);
}

// Memory peaks and the achieved-vs-peak compute figures, once the steps are in.
void finish_result(TrainResult& r, const RunPlan& plan, const core::DeviceContext& dev) {
  dev.synchronize();
  r.peak_memory_bytes = dev.memory().peak_bytes;
  if (dev.is_cpu()) r.peak_rss_bytes = core::process_peak_rss_bytes();
  // Training costs about three forward passes (forward, and backward for inputs and weights).
  r.achieved_tflops = 3.0 * r.gflops_per_image * r.throughput_img_s / 1e3;
  r.peak_tflops = plan.resolved.peak_tflops;
  if (!r.peak_tflops && plan.resolved.probe_peak) r.peak_tflops = probe_peak_tflops(plan.precision, dev);
  if (r.peak_tflops && *r.peak_tflops > 0) r.utilization = r.achieved_tflops / *r.peak_tflops;
}

// Runs the steps with the observers a configuration asks for, in the order they should hear events.
// Any rank preempted: every rank stops after the same step (a rank alone would leave the others
// waiting in the next all-reduce).
int agreed_stop_signal(dist::GradientSync* sync) {
  const int sig = preemption_signal();
  if (!sync || sync->world_size() == 1) return sig;
  const auto m = sync->mean_over_ranks({sig ? 1.0 : 0.0, static_cast<double>(sig)}, "agreeing whether to stop");
  return m[0] > 0 ? (sig ? sig : SIGTERM) : 0;
}

void run_steps(Trainer& trainer, const RunPlan& plan, const TrainHooks& hooks, const OpenedData& data,
               const core::DeviceContext& dev, std::ostream& msg, TrainResult& r, dist::GradientSync* sync,
               const ResumePoint& resumed) {
  const TrainConfig& c = plan.resolved;
  const bool leader = c.rank == 0;
  std::unique_ptr<ProfileObserver> profiler;
  if (!c.profile.dir.empty()) profiler = std::make_unique<ProfileObserver>(c.profile, dev.name());
  std::unique_ptr<JsonLinesLog> log;
  if (!c.log_path.empty() && leader) log = std::make_unique<JsonLinesLog>(c.log_path);
  report::ProgressLine progress_line(c.progress && leader && report::stderr_is_terminal());
  std::ostringstream quiet;  // every rank evaluates its shard; rank 0 prints the combined result
  auto evaluation = make_evaluation(plan, data, trainer.model(), dev.device(), leader ? msg : quiet, progress_line, sync);
  ProgressObserver progress(progress_line, c.steps);
  StepStatistics stats;
  std::unique_ptr<CheckpointObserver> checkpoints;
  const int64_t per_epoch = data.facts ? steps_per_epoch(c, *data.facts) : 1;
  if (!c.checkpoint_dir.empty() && leader)
    checkpoints = std::make_unique<CheckpointObserver>(trainer, c, per_epoch, resumed, msg);
  if (profiler) trainer.add_observer(profiler.get());
  for (auto* o : hooks.train_observers) trainer.add_observer(o);
  trainer.add_observer(&stats);
  if (log) trainer.add_observer(log.get());
  if (checkpoints) trainer.add_observer(checkpoints.get());
  if (evaluation) trainer.add_observer(evaluation.get());
  trainer.add_observer(&progress);
  trainer.begin_run();
  while (trainer.steps_done() < c.steps) {
    const StepRecord rec = trainer.step();
    if (rec.step == c.crash_after_step) {  // test aid: die like kill -9 once the step is saved
      if (checkpoints) checkpoints->wait();
      std::_Exit(137);
    }
    if (const int sig = c.checkpoint_dir.empty() ? 0 : agreed_stop_signal(sync)) {
      r.stop_signal = sig;
      msg << "\nstopped by " << (sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "a signal") << " after step "
          << trainer.steps_done() << (checkpoints ? ": writing a checkpoint" : "") << "\n";
      break;
    }
  }
  trainer.end_run(r);
}


// One device per local rank: "cuda" (or "auto" resolving to an accelerator) becomes cuda:LOCAL_RANK.
core::DeviceContext open_device(const std::string& spec, const std::optional<dist::WorkerEnv>& env) {
  auto dev = core::DeviceContext::open(spec);
  if (!env || dev.is_cpu() || spec.find(':') != std::string::npos) return dev;
  return core::DeviceContext::open(c10::DeviceTypeName(dev.device().type(), /*lower_case=*/true) + ":" +
                                   std::to_string(env->local_rank));
}

// The caller's device, or the request's; the CPU's allocator as the request says.
core::DeviceContext run_device(const CheckedConfig& checked, const TrainHooks& hooks) {
  auto dev = hooks.device ? *hooks.device : open_device(checked.config().device, checked.workers());
  if (dev.is_cpu()) {
    core::install_cpu_memory_tracking();
    core::set_cpu_block_caching(checked.config().cpu_allocator == "caching");
  }
  return dev;
}

// The process group the request was checked for, joined on `dev`; null on one process.
std::unique_ptr<dist::Group> join_group(const CheckedConfig& checked, const core::DeviceContext& dev) {
  if (!checked.workers()) return nullptr;
  dist::GroupOptions go;
  go.backend = checked.config().dist_backend;
  go.timeout = std::chrono::milliseconds(static_cast<int64_t>(checked.config().dist_timeout_s * 1000));
  return dist::Group::join(*checked.workers(), dev, go);
}

// Rank 0 picks the checkpoint to resume from (trying each under --resume auto) and every rank
// loads that one.
ResumePoint agree_on_resume(const TrainConfig& c, dist::Group* group, Trainer& trainer, int64_t batches_per_epoch,
                            std::ostream& msg) {
  const ResumeLoad load = [&](const core::StateDict& state) { resume_trainer(trainer, state, batches_per_epoch, &msg); };
  if (!group || group->size() == 1 || c.resume.empty()) return choose_resume(c.resume, c.checkpoint_dir, c, load, msg);
  ResumePoint p;
  if (group->rank() == 0) p = choose_resume(c.resume, c.checkpoint_dir, c, load, msg);
  std::string path = group->share_from_rank0("resume", group->rank() == 0 ? p.path + "\n" : "");
  path.pop_back();
  if (group->rank() != 0 && !path.empty()) p = choose_resume(path, c.checkpoint_dir, c, load, msg);
  return p;
}

}  // namespace

TrainResult run_training(const CheckedConfig& checked, const TrainHooks& hooks) {
  const TrainConfig& asked = checked.config();
  std::ostream& msg = hooks.messages ? *hooks.messages : std::cerr;
  core::load_backend_libraries(asked.backend_libs);
  if (asked.threads > 0) at::set_num_threads(asked.threads);
  const core::DeviceContext dev = run_device(checked, hooks);
  const std::unique_ptr<dist::Group> group = join_group(checked, dev);
  std::ostringstream quiet;  // ranks other than 0 keep their notes to themselves
  std::ostream& notes = asked.rank == 0 ? msg : quiet;
  // The rank that writes checkpoints owns the directory from before --resume reads it to the end.
  std::optional<CheckpointDirLock> checkpoint_lock;
  if (!asked.checkpoint_dir.empty() && asked.rank == 0) {
    std::string note;
    checkpoint_lock.emplace(asked.checkpoint_dir, &note);
    if (!note.empty()) notes << "note: " << note << "\n";
  }
  OpenedData data = open_data(asked, hooks, dev.device());
  const RunPlan plan = resolve(checked, dev, data.facts);
  const TrainConfig& c = plan.resolved;
  apply_math_mode(plan.precision, dev);
  for (const auto& note : plan.notes)
    if (std::find(hooks.notes_said.begin(), hooks.notes_said.end(), note) == hooks.notes_said.end())
      notes << "note: " << note << "\n";

  TrainResult r;
  r.config = c;
  r.requested = checked.requested();
  r.notes = plan.notes;
  r.device = dev.name();
  r.device_description = dev.info().description;
  r.precision = c.precision;
  r.precision_native = plan.precision.native_on_cpu;
  r.data = data.facts ? c.data : "synthetic";
  r.rank = c.rank;
  r.world_size = c.world_size;
  r.global_batch = global_batch(c);
  if (group) r.dist_backend = group->backend_name();
  if (data.facts) r.train_samples = data.facts->train_samples;

  dev.synchronize();
  dev.reset_peak_memory();
  at::manual_seed(c.seed);
  const core::ModelOptions mo = model_options(c);
  auto model = core::create_model(c.model, mo);
  if (!c.weights_in.empty()) core::load_weights(*model, c.weights_in, &notes);
  r.parameters = core::parameter_count(*model);
  r.gflops_per_image = 2.0 * static_cast<double>(core::forward_macs(c.model, mo, c.image_size)) / 1e9;

  try {
    model->to(dev.device());
    if (c.channels_last) core::to_channels_last(*model);
    model->train();
    auto source = make_source(c, hooks, data, dev.device(), dev.name());
    auto scaler_log = [&](const std::string& line) {
      msg << line << "\n";
      r.messages.push_back(line);
    };
    std::unique_ptr<dist::DataParallel> data_parallel;
    if (group) {
      dist::DataParallelOptions dpo;
      dpo.bucket_cap_mb = c.bucket_cap_mb;
      dpo.broadcast_buffers = c.broadcast_buffers;
      dpo.compression = c.grad_compression;
      data_parallel = std::make_unique<dist::DataParallel>(*group, *model, dpo);
      if (c.sync_bn) model->set_batch_norm(dist::sync_batch_norm(*group));
    }
    auto parts = make_trainer_parts(plan, dev.device(), model.ptr(), std::move(source), scaler_log);
    parts.grad_sync = data_parallel.get();
    Trainer trainer(plan, dev, std::move(parts));
    r.fused_optimizer = trainer.optimizer().uses_fused_kernels();
    r.fused_scaler = trainer.scaler() && trainer.scaler()->uses_fused_kernels();
    const ResumePoint resume =
        agree_on_resume(c, group.get(), trainer, data.facts ? steps_per_epoch(c, *data.facts) : 1, notes);
    if (!resume.path.empty()) {
      r.resumed_from = resume.path;
      r.resumed_at_step = trainer.steps_done();
      notes << "resumed from " << resume.path << " at step " << r.resumed_at_step << "\n";
    }
    if (!c.checkpoint_dir.empty()) install_preemption_handlers();
    run_steps(trainer, plan, hooks, data, dev, msg, r, data_parallel.get(), resume);
    if (data_parallel) data_parallel->verify_in_sync("at the end of training");
    report_data_findings(data, trainer.source(), r);
    if (!c.weights_out.empty() && c.rank == 0) core::save_weights(*model, c.weights_out);
    if (group) group->barrier("the end of training");
  } catch (const c10::OutOfMemoryError& e) {
    rethrow_as_oom(c, dev.name(), e.what_without_backtrace());
  } catch (const std::bad_alloc& e) {
    rethrow_as_oom(c, dev.name(), "host allocation failed");
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    if (what.find("can't allocate memory") != std::string::npos || what.find("out of memory") != std::string::npos)
      rethrow_as_oom(c, dev.name(), what);
    throw std::runtime_error(what.substr(0, what.find('\n')));
  }
  finish_result(r, plan, dev);
  return r;
}

}  // namespace crosstrain::train
