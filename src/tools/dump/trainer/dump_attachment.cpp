#include "tools/dump/trainer/dump_attachment.h"

#include <stdexcept>

#include "tools/dump/trainer/dump_session.h"
#include "tools/dump/trainer/shared_batches.h"
#include "tools/train/run_plan.h"
#include "tools/train/train.h"

namespace crosstrain::dump {

DumpAttachment::DumpAttachment() = default;
DumpAttachment::~DumpAttachment() = default;
DumpAttachment::DumpAttachment(DumpAttachment&&) noexcept = default;
DumpAttachment& DumpAttachment::operator=(DumpAttachment&&) noexcept = default;

void DumpAttachment::close() {
  if (session_) session_->close();
}

std::string DumpAttachment::dir() const { return session_ ? session_->dir() : std::string(); }

int64_t DumpAttachment::records_written() const { return session_ ? session_->records_written() : 0; }

namespace {

std::unique_ptr<dump::ModuleDisturbance> parse_perturbation(const std::string& spec) {
  const auto eq = spec.find('=');
  double rel = 1e-2;
  if (eq != std::string::npos) {
    try {
      size_t used = 0;
      const std::string value = spec.substr(eq + 1);
      rel = std::stod(value, &used);
      if (used != value.size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw std::invalid_argument("--perturb-module: expected MODULE[=REL], got '" + spec + "'");
    }
  }
  return std::make_unique<dump::ModuleDisturbance>(spec.substr(0, eq), dump::ModuleDisturbance::Kind::Noise, rel);
}

}  // namespace

DumpAttachment attach_dump(const DumpOptions& f, const std::string& dir, const train::TrainConfig& c,
                           train::TrainHooks& hooks, bool host_batches) {
  DumpAttachment a;
  if (!dir.empty()) {
    dump::DumpSessionOptions o;
    o.dir = dir;
    o.mode = dump::parse_dump_mode(f.mode);
    o.steps = dump::StepSelection::parse(f.steps);
    o.meta = dump::dump_meta_for(c);
    o.overwrite = f.overwrite;
    a.session_ = std::make_unique<dump::DumpSession>(o);
    hooks.train_observers.push_back(a.session_.get());
  }
  if (!f.perturb.empty()) a.disturbances_.push_back(parse_perturbation(f.perturb));
  if (!f.inject_nan.empty())
    a.disturbances_.push_back(
        std::make_unique<dump::ModuleDisturbance>(f.inject_nan, dump::ModuleDisturbance::Kind::NaN));
  // After the dump: observers' on_exit runs last-registered first, so the dump sees the change.
  for (auto& d : a.disturbances_) hooks.train_observers.push_back(d.get());
  if (!f.input_npy.empty()) {
    const std::string npy = f.input_npy;
    const int64_t classes = c.num_classes;
    const bool cl = c.channels_last;
    hooks.make_source = [npy, classes, cl](const std::string& device) {
      return dump::make_npy_batch_source(npy, device, classes, cl);
    };
  } else if (host_batches) {
    const core::SyntheticOptions so = train::synthetic_options(c);
    hooks.make_source = [so](const std::string& device) { return dump::make_host_synthetic_source(so, device); };
  }
  return a;
}

}  // namespace crosstrain::dump
