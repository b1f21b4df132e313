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

std::vector<train::TrainResult> run_bench(const BenchOptions& o, std::ostream* messages) {
  core::load_backend_libraries(o.base.backend_libs);
  auto dev = core::DeviceContext::open(o.base.device);
  train::TrainConfig c = o.base;
  c.device = dev.name();
  c.backend_libs.clear();  // loaded once above
  bench_defaults(c, dev.is_cpu());
  if (o.model) c.model = *o.model;
  if (o.batch_size) c.batch_size = *o.batch_size;
  if (o.image_size) c.image_size = *o.image_size;
  if (o.steps) c.steps = *o.steps;
  // An explicit --warmup-steps that leaves no timed step is refused (validate_config); the default
  // is lowered to fit, and said, as train does.
  std::vector<std::string> notes;
  c.warmup_steps = o.warmup_steps ? *o.warmup_steps : train::fit_default_warmup(c.warmup_steps, c.steps, notes);
  std::ostream& out = messages ? *messages : std::cerr;
  for (const auto& note : notes) out << "note: " << note << "\n";
  std::vector<std::string> precisions = o.precisions;
  if (precisions.empty()) precisions = {"fp32", train::default_amp_precision(dev)};
  std::vector<std::string> said;
  // Reject every bad precision before the first (long) run starts, and say which ones this CPU
  // emulates: the comparison is then one of emulation, not of mixed precision.
  for (const auto& p : precisions) {
    train::TrainConfig check = c;
    check.precision = p;
    train::validate_config(check);
    const auto plan = train::plan_precision(p, c.loss_scale, dev);
    if (!plan.emulation_note.empty() && std::find(said.begin(), said.end(), plan.emulation_note) == said.end()) {
      out << "note: " << plan.emulation_note << "\n";
      said.push_back(plan.emulation_note);
    }
  }
  std::vector<train::TrainResult> results;
  for (const auto& p : precisions) {
    train::TrainConfig run = c;
    run.precision = p;
    if (!run.profile.dir.empty()) run.profile.dir += "/" + p;
    if (messages) *messages << "[bench] " << p << ": " << run.model << ", batch " << run.batch_size << ", "
                            << run.image_size << "px, " << run.steps << " steps on " << run.device << std::endl;
    train::TrainHooks hooks;
    hooks.messages = &out;
    hooks.notes_said = said;
    results.push_back(train::run_training(run, hooks));
    results.back().notes.insert(results.back().notes.begin(), notes.begin(), notes.end());
  }
  return results;
}

}  // namespace crosstrain::bench
