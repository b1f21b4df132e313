#include "tools/bench/bench.h"

#include <algorithm>
#include <iostream>

#include "core/device.h"
#include "tools/train/precision.h"
#include "tools/train/run_plan.h"
#include "tools/train/train.h"

namespace crosstrain::bench {

void bench_defaults(train::TrainConfig& c, bool cpu) {
  c.model = "resnet50";
  c.image_size = 224;
  if (cpu) {
    // A few seconds per fp32 step on a 2-core x86 CPU: two precisions finish inside 3 minutes.
    c.batch_size = 8;
    c.steps = 7;
    c.warmup_steps = 2;
  } else {
    c.batch_size = 128;
    c.steps = 40;
    c.warmup_steps = 5;
  }
}

namespace {

// The configuration every run shares, on the opened device; `notes` says a lowered default warm-up.
train::TrainConfig shared_config(const BenchOptions& o, const core::DeviceContext& dev,
                                 std::vector<std::string>& notes) {
  train::TrainConfig c = o.base;
  c.device = dev.name();
  c.backend_libs.clear();  // loaded once, before the device was opened
  bench_defaults(c, dev.is_cpu());
  if (o.model) c.model = *o.model;
  if (o.batch_size) c.batch_size = *o.batch_size;
  if (o.image_size) c.image_size = *o.image_size;
  if (o.steps) c.steps = *o.steps;
  // An explicit --warmup-steps that leaves no timed step is refused (check_config); the default
  // is lowered to fit, and said, as train does.
  c.warmup_steps = o.warmup_steps ? *o.warmup_steps : train::fit_default_warmup(c.warmup_steps, c.steps, notes);
  return c;
}

// Every run checked before the first (long) one starts: a bad precision costs no run.
std::vector<train::CheckedConfig> checked_runs(const train::TrainConfig& shared,
                                               const std::vector<std::string>& precisions) {
  std::vector<train::CheckedConfig> runs;
  for (const auto& p : precisions) {
    train::TrainConfig run = shared;
    run.precision = p;
    if (!run.profile.dir.empty()) run.profile.dir += "/" + p;
    runs.push_back(train::check_config(run));
  }
  return runs;
}

// Says once which precisions this CPU emulates (the comparison is then one of emulation, not of
// mixed precision); returns the notes said.
std::vector<std::string> say_emulation(const std::vector<train::CheckedConfig>& runs, const core::DeviceContext& dev,
                                       std::ostream& out) {
  std::vector<std::string> said;
  for (const auto& run : runs) {
    const auto& c = run.config();
    const std::string note = train::plan_precision(c.precision, c.loss_scale, dev).emulation_note;
    if (note.empty() || std::find(said.begin(), said.end(), note) != said.end()) continue;
    out << "note: " << note << "\n";
    said.push_back(note);
  }
  return said;
}

}  // namespace

std::vector<train::TrainResult> run_bench(const BenchOptions& o, std::ostream* messages) {
  core::load_backend_libraries(o.base.backend_libs);
  const auto dev = core::DeviceContext::open(o.base.device);
  std::vector<std::string> notes;
  const train::TrainConfig shared = shared_config(o, dev, notes);
  std::ostream& out = messages ? *messages : std::cerr;
  for (const auto& note : notes) out << "note: " << note << "\n";
  std::vector<std::string> precisions = o.precisions;
  if (precisions.empty()) precisions = {"fp32", train::default_amp_precision(dev)};
  const auto runs = checked_runs(shared, precisions);
  train::TrainHooks hooks;
  hooks.device = &dev;
  hooks.messages = &out;
  hooks.notes_said = say_emulation(runs, dev, out);
  std::vector<train::TrainResult> results;
  for (const auto& run : runs) {
    const auto& c = run.config();
    if (messages) *messages << "[bench] " << c.precision << ": " << c.model << ", batch " << c.batch_size << ", "
                            << c.image_size << "px, " << c.steps << " steps on " << c.device << std::endl;
    results.push_back(train::run_training(run, hooks));
    results.back().notes.insert(results.back().notes.begin(), notes.begin(), notes.end());
  }
  return results;
}

}  // namespace crosstrain::bench
