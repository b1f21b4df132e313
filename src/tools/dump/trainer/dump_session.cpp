#include "tools/dump/trainer/dump_session.h"

#include <ATen/CPUGeneratorImpl.h>

#include <limits>
#include <stdexcept>

namespace crosstrain::dump {

namespace {

// The dump dtype of a tensor and the host tensor holding exactly those elements. Types the format
// has no name for (int8, complex, ...) are recorded as float32.
std::pair<dump::DType, at::Tensor> to_host(const at::Tensor& t) {
  at::Tensor h = t.detach();
  dump::DType d;
  switch (h.scalar_type()) {
    case at::kFloat: d = dump::DType::Float32; break;
    case at::kDouble: d = dump::DType::Float64; break;
    case at::kHalf: d = dump::DType::Float16; break;
    case at::kBFloat16: d = dump::DType::BFloat16; break;
    case at::kLong: d = dump::DType::Int64; break;
    case at::kInt: d = dump::DType::Int32; break;
    case at::kByte: d = dump::DType::UInt8; break;
    case at::kBool: d = dump::DType::Bool; break;
    default:
      d = dump::DType::Float32;
      h = h.to(at::kFloat);
  }
  // contiguous() after the copy: channels-last activations are written in NCHW order, so dumps
  // of channels-last and contiguous runs line up element by element.
  h = h.to(at::kCPU).contiguous();
  return {d, h};
}

}  // namespace

nlohmann::json dump_meta_for(const train::TrainConfig& c) {
  return {{"model", c.model},         {"precision", c.precision},   {"device", c.device},
          {"seed", c.seed},           {"batch_size", c.batch_size}, {"image_size", c.image_size},
          {"threads", c.threads},     {"channels_last", c.channels_last},
          {"loss_scale", c.loss_scale}, {"optimizer", c.optimizer}};
}

DumpSession::DumpSession(const DumpSessionOptions& options) : options_(options) {
  if (options_.dir.empty()) throw std::invalid_argument("--dump needs a directory");
  dump::DumpWriterOptions wo;
  wo.producer = "crosstrain";
  wo.meta = options_.meta;
  wo.overwrite = options_.overwrite;
  writer_.open(options_.dir, options_.mode, wo);
}

DumpSession::~DumpSession() {
  try {
    close();
  } catch (...) {  // a destructor must not throw; close() reports failures when called directly
  }
}

void DumpSession::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (writer_.is_open()) writer_.close();
}

int64_t DumpSession::records_written() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return writer_.records_written();
}

void DumpSession::write(int64_t step, const std::string& name, dump::RecordKind kind, const at::Tensor& t) {
  auto [dtype, host] = to_host(t);
  std::vector<int64_t> shape(host.sizes().begin(), host.sizes().end());
  std::lock_guard<std::mutex> lock(mutex_);
  if (!writer_.is_open()) return;
  writer_.write_tensor(step, name, kind, dtype, shape, host.data_ptr());
}

void DumpSession::on_step_begin(int64_t step) {
  step_ = step;
  dumping_ = options_.steps.contains(step);
  saw_scaled_ = false;
  micro_ = 0;
  micro_count_ = 1;
}

void DumpSession::on_micro_batch(int64_t, int64_t micro, int64_t count) {
  micro_ = micro;
  micro_count_ = count;
}

at::Tensor DumpSession::on_module_exit(const std::string& module, const at::Tensor& output) {
  if (!dumping_ || micro_ != 0 || !output.defined()) return output;
  // Written now: an in-place op later in forward would change the values.
  write(step_, module, dump::RecordKind::Forward, output);
  if (output.requires_grad()) {
    const int64_t step = step_;
    const double own_loss = static_cast<double>(micro_count_);  // undoes backward's 1/K
    // A void hook leaves the gradient unchanged. A hook registered before an in-place op still
    // sees the gradient with respect to this module's value.
    output.register_hook([this, step, module, own_loss](const at::Tensor& grad) {
      if (!grad.defined()) return;
      write(step, module, dump::RecordKind::GradOutput, own_loss == 1 ? grad : grad * own_loss);
    });
  }
  return output;
}

void DumpSession::on_loss(int64_t step, const at::Tensor& loss, std::optional<double> loss_scale) {
  if (!dumping_ || micro_ != 0) return;
  write(step, "", dump::RecordKind::Loss, loss.to(at::kFloat));
  if (loss_scale) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (writer_.is_open()) writer_.write_scalar(step, dump::RecordKind::LossScale, *loss_scale);
  }
}

void DumpSession::on_param_grads(int64_t step, bool scaled, const train::NamedTensors& grads) {
  if (scaled) saw_scaled_ = true;
  if (!dumping_) return;
  // Without a scaler the only report is the (unscaled) gradient, recorded as param_grad; with one,
  // param_grad holds the scaled gradient and param_grad_unscaled the divided one.
  const auto kind = (!scaled && saw_scaled_) ? dump::RecordKind::ParamGradUnscaled : dump::RecordKind::ParamGrad;
  for (const auto& [name, g] : grads) write(step, name, kind, g);
}

void DumpSession::on_step_end(const train::StepRecord& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (writer_.is_open()) writer_.log_loss(record.step, record.loss);
  dumping_ = false;
}

ModuleDisturbance::ModuleDisturbance(std::string module, Kind kind, double relative)
    : module_(std::move(module)), kind_(kind), relative_(relative) {
  if (module_.empty()) throw std::invalid_argument("a module name is needed to disturb its output");
}

at::Tensor ModuleDisturbance::on_module_exit(const std::string& module, const at::Tensor& output) {
  if (module != module_ || !output.defined() || !output.is_floating_point() || output.numel() == 0) return output;
  ++applied_;
  if (kind_ == Kind::Noise) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(1234);
    at::Tensor noise = at::randn(output.sizes(), gen, at::TensorOptions().dtype(at::kFloat)).to(output.options());
    return output + noise * (relative_ * output.detach().abs().mean().item<double>());
  }
  at::Tensor t = output.contiguous().clone();
  t.view({-1}).narrow(0, 0, 1).fill_(std::numeric_limits<double>::quiet_NaN());
  return t;
}

}  // namespace crosstrain::dump
