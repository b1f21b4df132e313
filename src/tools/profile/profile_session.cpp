#include "tools/profile/profile_session.h"

#include <ATen/record_function.h>
#include <dlfcn.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <filesystem>
#include <stdexcept>

#include "core/models.h"
#include "tools/profile/portable_recorder.h"

namespace crosstrain::profile {

namespace kp = torch::autograd::profiler;
namespace pi = torch::profiler::impl;

void validate_profile_options(const ProfileOptions& o) {
  if (o.dir.empty()) return;
  if (o.wait < 0 || o.warmup < 0 || o.active < 1 || o.repeat < 0)
    throw std::invalid_argument("profile schedule: --profile-wait/--profile-warmup >= 0, --profile-active >= 1, "
                                "--profile-repeat >= 0");
  if (o.rank < 0) throw std::invalid_argument("profile: rank must be >= 0");
  if (o.recorder != "auto" && o.recorder != "kineto" && o.recorder != "portable")
    throw std::invalid_argument("--profile-recorder must be auto, kineto or portable");
}

std::string trace_path(const std::string& dir, int64_t cycle, int rank) {
  const std::string file = "rank" + std::to_string(rank) + ".pt.trace.json";
  return (std::filesystem::path(dir) / ("cycle" + std::to_string(cycle)) / file).string();
}

namespace {

bool kineto_linked() { return dlsym(RTLD_DEFAULT, "_ZN9libkineto3apiEv") != nullptr; }

// One span per module: on_enter opens a user scope, on_exit closes the innermost.
class ModuleScopes final : public core::ForwardObserver {
 public:
  void on_enter(const std::string& module) override {
    auto rf = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (rf->isActive()) rf->before(module);
    open_.push_back(std::move(rf));
  }
  at::Tensor on_exit(const std::string&, const at::Tensor& out) override {
    if (!open_.empty()) open_.pop_back();
    return out;
  }
  void close_all() { open_.clear(); }
  bool reads_outputs() const override { return false; }  // spans only: the model may work in place

 private:
  std::vector<std::unique_ptr<at::RecordFunction>> open_;
};

enum class Phase { None, Wait, Warmup, Active };

}  // namespace

struct ProfileSession::Impl {
  std::string device;
  bool kineto = false;
  bool prepared = false;
  bool recording = false;
  int64_t cycle_steps = 0;
  int64_t window_first_step = -1;
  std::unique_ptr<PortableRecorder> portable;
  std::unique_ptr<at::RecordFunction> step_scope;
  ModuleScopes modules;

  pi::ProfilerConfig config(const ProfileOptions& o) const {
    return pi::ProfilerConfig(pi::ProfilerState::KINETO, o.record_shapes, o.profile_memory);
  }
  std::set<pi::ActivityType> activities() const {
    std::set<pi::ActivityType> a = {pi::ActivityType::CPU};
    if (device.rfind("cuda", 0) == 0) a.insert(pi::ActivityType::CUDA);
    return a;
  }
};

ProfileSession::ProfileSession(ProfileOptions options, std::string device)
    : impl_(std::make_unique<Impl>()), opt_(std::move(options)) {
  validate_profile_options(opt_);
  impl_->device = std::move(device);
  const bool accelerator_without_kineto = impl_->device != "cpu" && impl_->device.rfind("cuda", 0) != 0;
  if (opt_.recorder == "kineto") {
    if (!kineto_linked()) throw std::invalid_argument("--profile-recorder kineto: this libtorch has no Kineto");
    impl_->kineto = true;
  } else if (opt_.recorder == "auto") {
    impl_->kineto = kineto_linked() && !accelerator_without_kineto;
  }
  recorder_ = impl_->kineto ? "kineto" : "portable";
  std::error_code ec;
  std::filesystem::create_directories(opt_.dir, ec);
  if (ec) throw std::runtime_error("cannot create profile directory " + opt_.dir + ": " + ec.message());
  impl_->cycle_steps = opt_.wait + opt_.warmup + opt_.active;
}

ProfileSession::~ProfileSession() {
  try {
    finish();
  } catch (...) {
    // Destructors do not throw; finish() reports errors when called directly.
  }
}

void ProfileSession::step_begin(int64_t step) {
  const int64_t cycle = step / impl_->cycle_steps, pos = step % impl_->cycle_steps;
  if (opt_.repeat > 0 && cycle >= opt_.repeat) return;
  Phase phase = pos < opt_.wait ? Phase::Wait : (pos < opt_.wait + opt_.warmup ? Phase::Warmup : Phase::Active);
  if (phase == Phase::Warmup && impl_->kineto && !impl_->prepared) {
    kp::prepareProfiler(impl_->config(opt_), impl_->activities());
    impl_->prepared = true;
  }
  if (phase == Phase::Active && !impl_->recording) {
    // The cycle's folder exists before anything is recorded, so a failure leaves no profiler running.
    const auto folder = std::filesystem::path(trace_path(opt_.dir, cycle, opt_.rank)).parent_path();
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec) throw std::runtime_error("cannot create profile directory " + folder.string() + ": " + ec.message());
    if (impl_->kineto) {
      if (!impl_->prepared) kp::prepareProfiler(impl_->config(opt_), impl_->activities());
      kp::enableProfiler(impl_->config(opt_), impl_->activities());
    } else {
      impl_->portable = std::make_unique<PortableRecorder>(opt_.record_shapes, opt_.profile_memory, impl_->device);
      impl_->portable->start();
    }
    impl_->recording = true;
    impl_->window_first_step = step;
  }
  if (phase == Phase::Active) {
    impl_->step_scope = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (impl_->step_scope->isActive()) impl_->step_scope->before("ProfilerStep#" + std::to_string(step));
  }
}

void ProfileSession::step_end(int64_t step) {
  impl_->step_scope.reset();
  if (!impl_->recording) return;
  if (step % impl_->cycle_steps == impl_->cycle_steps - 1) finish();
}

void ProfileSession::finish() {
  impl_->step_scope.reset();
  impl_->modules.close_all();
  if (!impl_->recording) {
    if (impl_->prepared && impl_->kineto) {
      // Prepared but never enabled: a short run. Enable and stop so Kineto is left clean.
      kp::enableProfiler(impl_->config(opt_), impl_->activities());
      kp::disableProfiler();
      impl_->prepared = false;
    }
    return;
  }
  const int64_t cycle = impl_->window_first_step / impl_->cycle_steps;
  const std::string path = trace_path(opt_.dir, cycle, opt_.rank);
  impl_->recording = false;
  impl_->prepared = false;
  if (impl_->kineto) {
    auto result = kp::disableProfiler();
    result->save(path);
  } else {
    impl_->portable->stop_and_write(path);
    impl_->portable.reset();
  }
  written_.push_back(path);
}

core::ForwardObserver* ProfileSession::module_observer() { return &impl_->modules; }

}  // namespace crosstrain::profile
