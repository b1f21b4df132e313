#include "tools/train/checkpoint.h"

#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <unistd.h>

#include "core/state_file.h"
#include "tools/train/trainer.h"

#ifndef CROSSTRAIN_VERSION
#define CROSSTRAIN_VERSION "unknown"
#endif

namespace crosstrain::train {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string text(double v) {
  std::ostringstream os;
  os << std::setprecision(17) << v;
  return os.str();
}

// A copy of a state tree whose tensors live in host memory and share nothing with the run.
// Parameters (tensors that require grad) and optimizer state change only in the optimizer step, so
// their copies are only allocated here and listed in `deferred` as (copy, source) pairs, to be
// filled by the writer thread while the next step's forward and backward run; everything else
// (batch-norm statistics, which forward updates, RNG and scaler state) is copied now.
c10::IValue host_snapshot(const c10::IValue& v, bool in_optimizer,
                          std::vector<std::pair<at::Tensor, at::Tensor>>& deferred) {
  if (v.isTensor()) {
    const at::Tensor t = v.toTensor().detach();
    if (in_optimizer || v.toTensor().requires_grad()) {
      at::Tensor copy = at::empty_like(t, t.options().device(at::kCPU));
      deferred.emplace_back(copy, t);
      return copy;
    }
    return t.is_cpu() ? t.clone() : t.to(at::kCPU);
  }
  if (v.isGenericDict()) {
    auto src = v.toGenericDict();
    c10::impl::GenericDict out(src.keyType(), src.valueType());
    for (const auto& item : src) {
      const bool optimizer = in_optimizer || (item.key().isString() && item.key().toStringRef() == "optimizer");
      out.insert(item.key(), host_snapshot(item.value(), optimizer, deferred));
    }
    return out;
  }
  if (v.isList()) {
    auto src = v.toList();
    c10::impl::GenericList out(src.elementType());
    for (const auto& e : src) out.push_back(host_snapshot(e, in_optimizer, deferred));
    return out;
  }
  return v;
}

}  // namespace

std::string checkpoint_name(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "checkpoint_%09lld.pt", static_cast<long long>(step));
  return name;
}

std::vector<std::pair<std::string, std::string>> checkpoint_fingerprint(const TrainConfig& c) {
  return {{"--model", c.model},
          {"--num-classes", std::to_string(c.num_classes)},
          {"--small-stem", c.small_stem ? "true" : "false"},
          {"--base-width", std::to_string(c.base_width)},
          {"--zero-init-residual", c.zero_init_residual ? "true" : "false"},
          {"--batch-size", std::to_string(c.batch_size)},
          {"--image-size", std::to_string(c.image_size)},
          {"--precision", c.precision},
          {"--loss-scale", c.loss_scale},
          {"--scale-growth-interval", std::to_string(c.scale_growth_interval)},
          {"--channels-last", c.channels_last ? "true" : "false"},
          {"--seed", std::to_string(c.seed)},
          {"--optimizer", c.optimizer},
          {"--lr", text(c.lr)},
          {"--momentum", text(c.momentum)},
          {"--nesterov", c.nesterov ? "true" : "false"},
          {"--weight-decay", text(c.weight_decay)},
          {"--no-decay-bn-bias", c.no_decay_bn_bias ? "true" : "false"},
          {"--schedule", c.schedule},
          {"--lr-warmup-steps", std::to_string(c.lr_warmup_steps)},
          {"--lr-step-size", std::to_string(c.lr_step_size)},
          {"--lr-gamma", text(c.lr_gamma)},
          {"--label-smoothing", text(c.label_smoothing)},
          {"--clip-grad-norm", text(c.clip_grad_norm)},
          {"--data", c.data.empty() ? "synthetic" : c.data},
          {"--max-samples", std::to_string(c.max_samples)},
          {"--min-crop-scale", text(c.min_crop_scale)},
          {"--no-flip", c.hflip ? "false" : "true"},
          {"--keep-last", c.drop_last ? "false" : "true"},
          {"--normalize-on-device", c.normalize_on_device ? "true" : "false"},
          {"world size", std::to_string(c.world_size)},
          {"--accumulate-steps", std::to_string(c.accumulate_steps)},
          {"--grad-compression", c.grad_compression},
          {"--no-broadcast-buffers", c.broadcast_buffers ? "false" : "true"},
          {"--sync-bn", c.sync_bn ? "true" : "false"}};
}

std::vector<std::string> fingerprint_differences(const core::StateDict& state, const TrainConfig& resolved) {
  std::vector<std::string> diffs;
  auto args_it = state.find(c10::IValue("args"));
  if (args_it == state.end() || !args_it->value().isGenericDict()) return diffs;
  const auto args = args_it->value().toGenericDict();
  for (const auto& [k, v] : checkpoint_fingerprint(resolved)) {
    auto it = args.find(c10::IValue(k));
    if (it == args.end() || !it->value().isString()) continue;
    if (it->value().toStringRef() != v) diffs.push_back(k + " " + it->value().toStringRef() + " (now " + v + ")");
  }
  return diffs;
}

std::vector<fs::path> list_checkpoints(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("checkpoint_", 0) == 0 && name.size() > 3 && name.compare(name.size() - 3, 3, ".pt") == 0 &&
        e.is_regular_file(ec))
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) { return a.filename() > b.filename(); });
  return out;
}

// ---- writer ---------------------------------------------------------------------------------------

CheckpointWriter::CheckpointWriter(fs::path dir, int64_t keep, Judge judge, const ResumePoint& resumed)
    : dir_(std::move(dir)), keep_(keep), judge_(std::move(judge)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_)) throw std::runtime_error("cannot create --checkpoint-dir " + dir_.string());
  // What --resume auto refused need not be read again. The checkpoint it resumed from is judged
  // like any other: it may be another program's, or named for another step than it holds.
  auto here = [&](const std::string& p) {
    const fs::path parent = fs::path(p).parent_path();
    return fs::equivalent(parent.empty() ? fs::path(".") : parent, dir_, ec);
  };
  for (const auto& [path, why] : resumed.skipped)
    if (here(path)) verdicts_[fs::path(path).filename().string()] = why;
  thread_ = std::thread([this] { run(); });
}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CheckpointWriter::save(const c10::IValue& state, int64_t step) {
  const auto t0 = Clock::now();
  wait();
  std::vector<std::pair<at::Tensor, at::Tensor>> deferred;
  c10::IValue copy = host_snapshot(state, false, deferred);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.emplace(std::move(copy), step);
    deferred_ = std::move(deferred);
    copying_ = !deferred_.empty();
  }
  cv_.notify_all();
  stall_s_ += seconds_since(t0);
}

void CheckpointWriter::wait_for_copies() {
  const auto t0 = Clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  if (!copying_) return;
  cv_.wait(lock, [this] { return !copying_; });
  stall_s_ += seconds_since(t0);
}

void CheckpointWriter::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return !pending_ && !busy_; });
  if (!error_.empty()) {
    std::string e;
    e.swap(error_);
    throw std::runtime_error(e);
  }
}

void CheckpointWriter::release_copies(std::vector<std::pair<at::Tensor, at::Tensor>>& copies) {
  copies.clear();  // drops the references to the run's tensors
  {
    std::lock_guard<std::mutex> lock(mutex_);
    copying_ = false;
  }
  cv_.notify_all();
}

void CheckpointWriter::run() {
  for (;;) {
    std::pair<c10::IValue, int64_t> job;
    std::vector<std::pair<at::Tensor, at::Tensor>> copies;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return pending_ || stop_; });
      if (!pending_) return;
      job = std::move(*pending_);
      pending_.reset();
      copies.swap(deferred_);
      busy_ = true;
    }
    const auto t0 = Clock::now();
    std::string error;
    const fs::path path = dir_ / checkpoint_name(job.second);
    try {
      try {
        // Tests widen the window between save() and these copies: the optimizer step must wait.
        static const int delay_ms = [] {
          const char* d = std::getenv("CROSSTRAIN_TEST_CHECKPOINT_COPY_DELAY_MS");
          return d ? std::atoi(d) : 0;
        }();
        if (delay_ms > 0 && !copies.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        for (auto& [copy, source] : copies) copy.copy_(source);
      } catch (...) {
        release_copies(copies);
        throw;
      }
      release_copies(copies);
      // A file of this name that was not resumable (judged, or refused by --resume auto) and
      // perhaps noted as kept is about to be replaced: say so, so no note claims it still exists.
      const std::string name = path.filename().string();
      const auto judged = verdicts_.find(name);
      const std::string replaced_why = judged != verdicts_.end() ? judged->second : "";
      core::save_state_file(job.first, path.string());
      verdicts_[name] = "";  // replaces whatever had that name
      if (!replaced_why.empty()) {
        reported_.erase(name);
        std::lock_guard<std::mutex> lock(mutex_);
        notes_.push_back("note: checkpoint " + path.string() + ", which this run could not resume from (" +
                         replaced_why.substr(0, replaced_why.find('\n')).substr(0, 400) +
                         "), was replaced by this run's checkpoint of step " + std::to_string(job.second));
      }
      prune(job.first);
    } catch (const std::exception& e) {
      error = std::string("checkpoint at step ") + std::to_string(job.second) + " failed: " + e.what();
    }
    job.first = c10::IValue();  // frees the snapshot before anyone waits on us
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
      write_s_ += seconds_since(t0);
      if (error.empty()) {
        ++written_;
        last_path_ = path.string();
      } else {
        error_ = error;
      }
    }
    cv_.notify_all();
  }
}

std::vector<std::string> CheckpointWriter::take_notes() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  out.swap(notes_);
  return out;
}

std::string CheckpointWriter::verdict(const fs::path& path, const c10::IValue& ours) {
  const std::string name = path.filename().string();
  auto it = verdicts_.find(name);
  if (it != verdicts_.end()) return it->second;
  std::string why;
  try {
    why = judge_(path, ours);
  } catch (const std::exception& e) {
    why = e.what();
  }
  verdicts_[name] = why;
  return why;
}

// The newest `keep` checkpoints this run could resume from stay, older ones of that kind go. Any
// other file is counted as nothing and left where it is, said once: a corrupt or foreign file can
// neither push a good checkpoint out nor be deleted by a run that does not know what it is.
void CheckpointWriter::prune(const c10::IValue& ours) {
  int64_t good = 0;
  for (const auto& path : list_checkpoints(dir_)) {
    const std::string name = path.filename().string();
    const std::string why = verdict(path, ours);
    if (!why.empty()) {
      if (reported_.insert(name).second) {
        std::lock_guard<std::mutex> lock(mutex_);
        notes_.push_back("note: checkpoint " + path.string() + " is kept but not counted toward --checkpoint-keep: " +
                         why.substr(0, why.find('\n')).substr(0, 400));
      }
      continue;
    }
    if (++good > std::max<int64_t>(keep_, 1)) {
      std::error_code ec;
      fs::remove(path, ec);
      verdicts_.erase(name);
    }
  }
}

// ---- observer -------------------------------------------------------------------------------------

namespace {

std::string key_text(const c10::IValue& key) {
  if (key.isString()) return "'" + key.toStringRef() + "'";
  if (key.isInt()) return std::to_string(key.toInt());
  return "?";
}

// The first tensor, at a place both trees have, whose shape or type differs between a checkpoint
// and a snapshot of this run ("" when none): what a run that tried to load it would trip over
// (a cut-short RNG state, a momentum buffer of another shape).
std::string tensor_layout_difference(const c10::IValue& theirs, const c10::IValue& ours, const std::string& at) {
  if (ours.isTensor()) {
    if (!theirs.isTensor()) return at + " is not a tensor";
    const at::Tensor &a = theirs.toTensor(), &b = ours.toTensor();
    if (a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type()) return "";
    std::ostringstream os;
    os << at << " is " << c10::toString(a.scalar_type()) << a.sizes() << " where this run's is "
       << c10::toString(b.scalar_type()) << b.sizes();
    return os.str();
  }
  if (ours.isGenericDict() && theirs.isGenericDict()) {
    const auto t = theirs.toGenericDict();
    for (const auto& item : ours.toGenericDict()) {
      auto it = t.find(item.key());
      if (it == t.end()) continue;
      std::string d = tensor_layout_difference(it->value(), item.value(), at + "[" + key_text(item.key()) + "]");
      if (!d.empty()) return d;
    }
  } else if (ours.isList() && theirs.isList()) {
    const auto a = theirs.toList(), b = ours.toList();
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      std::string d = tensor_layout_difference(a.get(i), b.get(i), at + "[" + std::to_string(i) + "]");
      if (!d.empty()) return d;
    }
  }
  return "";
}

// A checkpoint counts toward --checkpoint-keep when this run could resume from it: crosstrain's,
// readable, named for the step it holds (pruning goes by name), written with the same settings, its
// tensors shaped as this run's.
CheckpointWriter::Judge resumable_by(const TrainConfig& config) {
  return [config](const fs::path& path, const c10::IValue& ours) -> std::string {
    const core::StateDict state = load_checkpoint_file(path);
    if (!core::state_has(state, "crosstrain")) return "not a crosstrain checkpoint";
    const int64_t step = core::state_int(state, "step", path.string());
    if (path.filename().string() != checkpoint_name(step))
      return "it holds step " + std::to_string(step) + ", not the step of its name";
    const auto diffs = fingerprint_differences(state, config);
    if (!diffs.empty()) {
      std::string list;
      for (const auto& d : diffs) list += (list.empty() ? "" : ", ") + d;
      return "written with other settings: " + list;
    }
    return tensor_layout_difference(state, ours, "");
  };
}

}  // namespace

CheckpointObserver::CheckpointObserver(Trainer& trainer, const TrainConfig& resolved, int64_t batches_per_epoch,
                                       const ResumePoint& resumed, std::ostream& messages)
    : trainer_(trainer), config_(resolved), messages_(messages),
      batches_per_epoch_(std::max<int64_t>(1, batches_per_epoch)),
      writer_(resolved.checkpoint_dir, resolved.checkpoint_keep, resumable_by(resolved), resumed) {}

void CheckpointObserver::print_notes() {
  for (const auto& note : writer_.take_notes()) messages_ << note << "\n";
}

c10::IValue CheckpointObserver::checkpoint_state() const {
  core::StateDict d = trainer_.state_dict();
  d.insert("epoch", core::state_int(core::state_dict_at(d, "data", "state"), "epoch", "state"));
  core::StateDict args = core::make_state_dict();
  for (const auto& [k, v] : checkpoint_fingerprint(config_)) args.insert(k, v);
  d.insert("args", args);
  core::StateDict meta = core::make_state_dict();
  meta.insert("version", std::string(CROSSTRAIN_VERSION));
  meta.insert("format", kCheckpointFormat);
  d.insert("crosstrain", meta);
  return d;
}

void CheckpointObserver::on_step_end(const StepRecord& rec) {
  const int64_t done = rec.step + 1;
  const bool by_steps = config_.checkpoint_every > 0 && done % config_.checkpoint_every == 0;
  const bool by_epochs =
      config_.checkpoint_every_epochs > 0 && done % (config_.checkpoint_every_epochs * batches_per_epoch_) == 0;
  print_notes();  // of the previous write
  if (!by_steps && !by_epochs) return;
  const auto t0 = Clock::now();
  const c10::IValue state = checkpoint_state();
  writer_.add_stall(seconds_since(t0));  // gathering the state is part of the loop's cost
  writer_.save(state, done);
  last_saved_step_ = done;
}

void CheckpointObserver::on_phase_begin(int64_t step, Phase phase) {
  // The optimizer step changes what the writer may still be copying.
  if (phase == Phase::OptimizerStep || phase == Phase::ScalerUpdate) writer_.wait_for_copies();
}

void CheckpointObserver::save_now() {
  if (last_saved_step_ != trainer_.steps_done()) {
    writer_.save(checkpoint_state(), trainer_.steps_done());
    last_saved_step_ = trainer_.steps_done();
  }
  writer_.wait();
  print_notes();
}

void CheckpointObserver::on_run_end(TrainResult& r) {
  save_now();
  r.checkpoints_written = writer_.written();
  r.checkpoint_write_s = writer_.write_seconds();
  r.checkpoint_stall_s = writer_.stall_seconds();
}

// ---- preemption -----------------------------------------------------------------------------------

namespace {
std::atomic<int> g_signal{0};

extern "C" void on_preemption_signal(int sig) {
  int expected = 0;
  if (!g_signal.compare_exchange_strong(expected, sig)) _exit(128 + sig);  // the second signal: now
  static const char msg[] = "\ncrosstrain: signal received, stopping after this step (again to stop now)\n";
  (void)!::write(2, msg, sizeof msg - 1);
}
}  // namespace

void install_preemption_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_preemption_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

int preemption_signal() { return g_signal.load(); }

}  // namespace crosstrain::train
