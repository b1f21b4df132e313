#include "tools/checkpoint.h"

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

#include "core/model_state_finder.h"
#include "core/rng_state.h"
#include "core/state_file.h"
#include "tools/trainer.h"

#ifndef CROSSTRAIN_VERSION
#define CROSSTRAIN_VERSION "unknown"
#endif

namespace crosstrain::tools {

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

std::string checkpoint_name(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "checkpoint_%09lld.pt", static_cast<long long>(step));
  return name;
}

}  // namespace

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

CheckpointWriter::CheckpointWriter(fs::path dir, int64_t keep, std::ostream& messages)
    : dir_(std::move(dir)), keep_(keep), messages_(messages) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_)) throw std::runtime_error("cannot create --checkpoint-dir " + dir_.string());
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
      core::save_state_file(job.first, path.string());
      prune();
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

void CheckpointWriter::prune() {
  const auto all = list_checkpoints(dir_);
  for (size_t i = static_cast<size_t>(std::max<int64_t>(keep_, 1)); i < all.size(); ++i) {
    std::error_code ec;
    fs::remove(all[i], ec);
  }
}

// ---- observer -------------------------------------------------------------------------------------

CheckpointObserver::CheckpointObserver(Trainer& trainer, const TrainConfig& resolved, int64_t batches_per_epoch,
                                       std::ostream& messages)
    : trainer_(trainer), config_(resolved), batches_per_epoch_(std::max<int64_t>(1, batches_per_epoch)),
      writer_(resolved.checkpoint_dir, resolved.checkpoint_keep, messages) {}

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
}

void CheckpointObserver::on_run_end(TrainResult& r) {
  save_now();
  r.checkpoints_written = writer_.written();
  r.checkpoint_write_s = writer_.write_seconds();
  r.checkpoint_stall_s = writer_.stall_seconds();
}

// ---- resume ---------------------------------------------------------------------------------------

namespace {

void check_fingerprint(const core::StateDict& state, const TrainConfig& resolved, const std::string& path) {
  if (!core::state_has(state, "args") || !core::state_value(state, "args", path).isGenericDict()) return;
  const auto args = core::state_dict_at(state, "args", path);
  std::vector<std::string> diffs;
  for (const auto& [k, v] : checkpoint_fingerprint(resolved)) {
    auto it = args.find(c10::IValue(k));
    if (it == args.end() || !it->value().isString()) continue;
    if (it->value().toStringRef() != v) diffs.push_back(k + " " + it->value().toStringRef() + " (now " + v + ")");
  }
  if (diffs.empty()) return;
  std::string list;
  for (const auto& d : diffs) list += (list.empty() ? "" : ", ") + d;
  throw std::invalid_argument("cannot resume from " + path + ": it was written with " + list +
                              "; resume with the same settings, or start fresh in another --checkpoint-dir");
}

core::StateDict load_dict(const fs::path& path) {
  // A script's checkpoint may hold objects no resume needs (argparse.Namespace under 'args'):
  // they read as None; a model state dict that needed one is refused by find_model_state.
  std::vector<core::UnreadValue> unread;
  c10::IValue v = core::load_state_file(path.string(), &unread);
  if (!v.isGenericDict()) throw std::runtime_error(path.string() + " does not hold a dict of state");
  auto d = v.toGenericDict();
  if (core::state_has(d, "crosstrain") && !core::state_has(d, "model"))
    throw std::runtime_error(path.string() + " has no 'model' entry");
  return d;
}

}  // namespace

ResumePoint choose_resume(const std::string& spec, const fs::path& dir, const TrainConfig& resolved,
                          std::ostream& messages) {
  ResumePoint p;
  if (spec.empty()) return p;
  if (spec != "auto") {
    p.state = load_dict(spec);
    p.path = spec;
    check_fingerprint(p.state, resolved, spec);
    return p;
  }
  if (dir.empty()) throw std::invalid_argument("--resume auto needs --checkpoint-dir");
  for (const auto& path : list_checkpoints(dir)) {
    try {
      p.state = load_dict(path);
    } catch (const std::exception& e) {
      messages << "note: skipping checkpoint " << path.string() << ": " << e.what() << "\n";
      continue;
    }
    check_fingerprint(p.state, resolved, path.string());
    p.path = path.string();
    return p;
  }
  messages << "note: no checkpoint in " << dir.string() << " yet: starting fresh\n";
  return p;
}

namespace {

// A torchvision-reference checkpoint's optimizer, renumbered to this run's parameter groups. Python's
// single group numbers parameters in model order; this run numbers its decay group first.
core::StateDict regroup_optimizer(Trainer& t, const core::StateDict& saved) {
  const auto ours = t.optimizer().state_dict();
  const auto our_groups = core::state_list(ours, "param_groups", "optimizer");
  const auto saved_groups = core::state_list(saved, "param_groups", "checkpoint optimizer");
  if (saved_groups.size() == our_groups.size()) return saved;
  if (saved_groups.size() != 1)
    throw std::invalid_argument("checkpoint optimizer has " + std::to_string(saved_groups.size()) +
                                " parameter groups; this run has " + std::to_string(our_groups.size()));
  const auto& c = t.plan().resolved;
  std::vector<std::string> model_order, decay, no_decay;
  for (const auto& p : t.model().named_parameters()) {
    if (!p.value().requires_grad()) continue;
    model_order.push_back(p.key());
    (c.no_decay_bn_bias && p.value().dim() <= 1 ? no_decay : decay).push_back(p.key());
  }
  std::map<std::string, int64_t> our_index;
  int64_t i = 0;
  for (const auto& n : decay) our_index[n] = i++;
  for (const auto& n : no_decay) our_index[n] = i++;
  const auto saved_state = core::state_dict_at(saved, "state", "checkpoint optimizer");
  c10::impl::GenericDict state(c10::IntType::get(), c10::AnyType::get());
  for (const auto& item : saved_state) {
    const int64_t j = item.key().toInt();
    if (j < 0 || j >= static_cast<int64_t>(model_order.size()))
      throw std::invalid_argument("checkpoint optimizer state names parameter " + std::to_string(j) +
                                  "; the model has " + std::to_string(model_order.size()));
    state.insert(our_index.at(model_order[static_cast<size_t>(j)]), item.value());
  }
  const double lr = core::state_double(saved_groups.front().toGenericDict(), "lr", "checkpoint optimizer");
  c10::impl::GenericList groups(c10::AnyType::get());
  for (const auto& g : our_groups) {
    auto copy = g.toGenericDict().copy();
    copy.insert_or_assign("lr", lr);
    groups.push_back(copy);
  }
  core::StateDict out = core::make_state_dict();
  out.insert("state", state);
  out.insert("param_groups", groups);
  return out;
}

}  // namespace

void resume_trainer(Trainer& trainer, const core::StateDict& state, int64_t batches_per_epoch, std::ostream* notes) {
  if (core::state_has(state, "crosstrain")) {
    trainer.load_state_dict(state);
    return;
  }
  // A Python training script's checkpoint: "epoch" is the last finished epoch; resume at the next.
  const std::string where = "checkpoint";
  const int64_t epoch = core::state_has(state, "epoch") ? core::state_int(state, "epoch", where) : -1;
  const int64_t step = (epoch + 1) * std::max<int64_t>(1, batches_per_epoch);
  const auto pos = trainer.source().position();
  core::StateDict d = core::make_state_dict();
  const core::FoundModelState found =
      core::find_model_state(state, core::model_state_dict(trainer.model()), {}, where);
  if (notes && !found.as_saved()) *notes << "note: " << where << ": loaded " << found.describe() << "\n";
  core::StateDict model = core::make_state_dict();
  for (const auto& [name, t] : found.tensors) model.insert(name, t);
  d.insert("model", model);
  const char* optimizer = core::state_has(state, "optimizer") ? "optimizer" : "optimizer_state_dict";
  d.insert("optimizer", core::state_has(state, optimizer)
                            ? regroup_optimizer(trainer, core::state_dict_at(state, optimizer, where))
                            : trainer.optimizer().state_dict());
  d.insert("scaler", core::state_has(state, "scaler") ? core::state_value(state, "scaler", where)
                                                      : c10::IValue(core::make_state_dict()));
  core::StateDict sched = core::make_state_dict();
  sched.insert("last_epoch", step);
  d.insert("lr_scheduler", sched);
  d.insert("rng", core::rng_state_dict(at::kCPU));
  core::StateDict data = core::make_state_dict();
  data.insert("epoch", epoch + 1);
  data.insert("batch", int64_t{0});
  data.insert("seed", static_cast<int64_t>(pos.seed));
  d.insert("data", data);
  d.insert("step", step);
  trainer.load_state_dict(d);
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

}  // namespace crosstrain::tools
