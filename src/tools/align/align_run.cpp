#include "tools/align/align_run.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/device.h"
#include "core/models.h"
#include "tools/align/align_ranks.h"
#include "tools/train/precision.h"
#include "tools/train/run_plan.h"
#include "tools/train/train.h"
#include "tools/train/trainer.h"

namespace crosstrain::align {

using dump::attach_dump;
using dump::DumpAttachment;
using dump::DumpOptions;

namespace {

namespace fs = std::filesystem;

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  throw std::invalid_argument(key + ": expected true or false, got '" + v + "'");
}

// An integer in [lo, hi] (std::invalid_argument naming `where` otherwise).
int64_t parse_count(const std::string& where, const std::string& value, int64_t lo, int64_t hi) {
  try {
    size_t used = 0;
    const long long n = std::stoll(value, &used);
    if (used != value.size() || n < lo || n > hi) throw std::invalid_argument("");
    return n;
  } catch (const std::exception&) {
    throw std::invalid_argument(where + ": expected an integer from " + std::to_string(lo) + " to " +
                                std::to_string(hi) + ", got '" + value + "'");
  }
}

// Processes one side may start on this node: one per hardware thread, or 8 on smaller machines
// (each rank holds its own libtorch and model; more would only measure the scheduler).
int64_t max_align_processes() {
  return std::max<int64_t>(8, static_cast<int64_t>(std::thread::hardware_concurrency()));
}

std::string fresh_out_dir() {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  std::string dir = std::string("align-") + stamp;
  for (int i = 1; fs::exists(dir); ++i) dir = std::string("align-") + stamp + "-" + std::to_string(i);
  return dir;
}

std::string initial_weights_path(const std::string& out) { return (fs::path(out) / "initial_weights.pt").string(); }

// The initial weights both sides load, from the shared configuration's seed.
void write_initial_weights(const train::TrainConfig& base, const std::string& out) {
  at::manual_seed(base.seed);
  auto model = core::create_model(base.model, train::model_options(base));
  core::save_weights(*model, initial_weights_path(out));
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// "run B (device=cuda precision=bf16)", or "run B" for an empty spec.
std::string side_name(const std::string& side, const std::string& spec) {
  return "run " + side + (spec.empty() ? "" : " (" + spec + ")");
}

// The side as it will train, checked once (a bad one names the side).
train::CheckedConfig check_side(const train::TrainConfig& c, const std::string& name) {
  try {
    return train::check_config(c);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(name + ": " + first_line(e.what()));
  }
}

// The side's device must open before either side trains: a typo in B must not cost A's run. A
// side that loads a backend library is checked when it runs: loading it early would change the
// process A trains in (a backend's generators join every manual_seed). Returns the note for a
// precision this CPU emulates ("" otherwise), said before either side runs.
std::string open_side_device(const train::TrainConfig& c, const std::string& name) {
  if (!c.backend_libs.empty()) return "";
  try {
    const auto dev = core::DeviceContext::open(c.device);
    return train::plan_precision(c.precision, c.loss_scale, dev).emulation_note;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(name + ": " + first_line(e.what()));
  } catch (const c10::Error& e) {
    throw AlignSideFailed(name + " cannot start: " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw AlignSideFailed(name + " cannot start: " + first_line(e.what()));
  }
}

// Trains one side with its dump attached. A NaN or infinite loss stops the side but keeps its
// dump: returns why ("" when it finished). Any other failure is AlignSideFailed (or, for a caller
// mistake only found now, std::invalid_argument), naming the side.
std::string run_side(const AlignOptions& o, const train::CheckedConfig& c, const std::string& dir, bool disturbed,
                     const std::string& name, std::ostream& log, const std::vector<std::string>& notes_said = {}) {
  train::TrainHooks hooks;
  hooks.messages = &log;
  hooks.notes_said = notes_said;
  DumpOptions d = o.dump;
  d.overwrite = true;
  if (!disturbed) {
    d.perturb.clear();
    d.inject_nan.clear();
  }
  std::string stopped;
  try {
    DumpAttachment attachment = attach_dump(d, dir, c.config(), hooks, /*host_batches=*/c.config().data.empty());
    try {
      train::run_training(c, hooks);
    } catch (const train::NonFiniteLoss& e) {
      stopped = e.what();
    }
    attachment.close();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(name + ": " + first_line(e.what()));
  } catch (const c10::Error& e) {
    throw AlignSideFailed(name + " failed: " + first_line(e.what_without_backtrace()));
  } catch (const std::bad_alloc&) {
    throw AlignSideFailed(name + " failed: out of host memory");
  } catch (const std::exception& e) {
    throw AlignSideFailed(name + " failed: " + first_line(e.what()));
  }
  return stopped;
}

}  // namespace

AlignSide parse_align_side(const train::TrainConfig& base, const std::string& side, const std::string& spec) {
  AlignSide r;
  train::TrainConfig& c = r.config;
  c = base;
  std::istringstream in(spec);
  std::string token;
  while (in >> token) {
    const auto eq = token.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("--" + side + ": expected key=value, got '" + token + "'");
    const std::string key = token.substr(0, eq), value = token.substr(eq + 1);
    const std::string where = "--" + side + " " + key;
    if (key == "device") c.device = value;
    else if (key == "precision") c.precision = value;
    else if (key == "loss_scale") c.loss_scale = value;
    else if (key == "backend_lib") c.backend_libs.push_back(value);
    else if (key == "channels_last") c.channels_last = parse_bool(where, value);
    else if (key == "threads") c.threads = static_cast<int>(parse_count(where, value, 0, train::limits::kMaxThreads));
    else if (key == "nproc") r.nproc = static_cast<int>(parse_count(where, value, 1, max_align_processes()));
    else if (key == "accumulate_steps") {
      c.accumulate_steps = parse_count(where, value, 1, train::limits::kMaxSteps);
      r.accumulate_set = true;
    } else
      throw std::invalid_argument("--" + side + ": unknown key '" + key +
                                  "' (valid: device, precision, threads, channels_last, backend_lib, loss_scale, "
                                  "nproc, accumulate_steps)");
  }
  return r;
}

void match_align_sides(AlignSide& a, AlignSide& b, std::ostream* log) {
  if (a.nproc == 1 && b.nproc == 1) return;
  auto describe = [](const AlignSide& s) {
    return std::to_string(s.nproc) + " process(es) x " + std::to_string(s.config.accumulate_steps) + " micro-batch(es)";
  };
  const bool a_fewer = a.nproc <= b.nproc;
  AlignSide& few = a_fewer ? a : b;
  const AlignSide& many = a_fewer ? b : a;
  const int64_t want = many.nproc * many.config.accumulate_steps;
  if (few.nproc * few.config.accumulate_steps != want) {
    if (few.accumulate_set || want % few.nproc != 0)
      throw std::invalid_argument("the sides would train on different samples: A " + describe(a) + ", B " + describe(b) +
                                  " per step; set accumulate_steps so that both give the same product");
    few.config.accumulate_steps = want / few.nproc;
    if (log)
      *log << "align: run " << (a_fewer ? "A" : "B") << " accumulates " << few.config.accumulate_steps
           << " micro-batches per step to see the samples of the other side's " << many.nproc << " processes\n";
  }
  // One sharded dataset, generated on the host, with exactly the samples of every step.
  const int64_t samples = a.config.steps * want * a.config.batch_size;
  a.config.data = b.config.data = "synthetic:" + std::to_string(samples);
}

namespace {

struct Sides {
  AlignSide a, b;
};

// Both sides as they will train; the same in the align process and in every rank it starts.
Sides resolve_sides(AlignOptions& o, std::ostream* log) {
  if (o.base.image_size == 0) o.base.image_size = 224;
  Sides s{parse_align_side(o.base, "a", o.a), parse_align_side(o.base, "b", o.b)};
  match_align_sides(s.a, s.b, log);
  // Fixed synthetic batches offer 1000 classes; the sharded synthetic dataset has its own 10.
  for (AlignSide* side : {&s.a, &s.b})
    if (side->config.num_classes == 0) side->config.num_classes = side->config.data.empty() ? 1000 : 10;
  return s;
}

// What a side takes from the process that trains it, set before it is checked. A thread count set
// for one side stays set in the process: a side without one gets the default explicitly, so the
// order of the runs does not change what B measures. Ranks get one thread each from the launcher
// unless OMP_NUM_THREADS or the spec says otherwise. Both sides load the initial weights in `out`
// unless the base names some.
void settle_sides(Sides& s, const AlignOptions& o, const std::string& out) {
  const int default_threads = at::get_num_threads();
  for (AlignSide* side : {&s.a, &s.b}) {
    if (side->config.threads == 0 && side->nproc == 1) side->config.threads = default_threads;
    if (o.base.weights_in.empty()) side->config.weights_in = initial_weights_path(out);
  }
}

// A rank of a multi-process side, started by run_side_ranks: trains its side into SIDE/rank<R>.
AlignRun run_as_rank(AlignOptions o, const AlignWorkerRole& role, std::ostream& log) {
  Sides s = resolve_sides(o, nullptr);
  settle_sides(s, o, role.out);
  const bool is_b = role.side == "b";
  const std::string name = side_name(is_b ? "B" : "A", is_b ? o.b : o.a);
  const train::CheckedConfig c = check_side((is_b ? s.b : s.a).config, name);
  const std::string dir = (fs::path(role.out) / role.side / ("rank" + std::to_string(c.config().rank))).string();
  AlignRun run;
  run.worker = true;
  run.out_dir = role.out;
  const std::string stopped = run_side(o, c, dir, /*disturbed=*/is_b, name, log);
  run.result.agree = stopped.empty();
  if (!stopped.empty()) run.result.problems.push_back(name + " stopped early: " + first_line(stopped));
  return run;
}

// Trains one side, in this process or as its ranks; returns why it stopped early ("" if it did not).
std::string train_side(const AlignOptions& o, const AlignSide& side, const train::CheckedConfig& checked,
                       const std::string& letter, const std::string& name, const std::string& out, std::ostream& log,
                       const std::vector<std::string>& notes_said) {
  const std::string dir = (fs::path(out) / letter).string();
  const bool disturbed = letter == "b";
  if (side.nproc == 1) return run_side(o, checked, dir, disturbed, name, log, notes_said);
  log << "align: " << name << " trains as " << side.nproc << " processes; rank 0's dump is compared\n";
  const int status = run_side_ranks(letter, side.nproc, out);
  if (status == 0) return "";
  if (status == kAlignRankStoppedExit) return "a rank's loss turned NaN or infinite (the ranks' output is above)";
  throw AlignSideFailed(name + " failed: its ranks exited with status " + std::to_string(status) +
                        " (their messages are above)");
}

// Where a side's dump is read for the comparison: rank 0's for a multi-process side.
std::string compared_dump(const std::string& out, const std::string& letter, const AlignSide& side) {
  const fs::path dir = fs::path(out) / letter;
  return (side.nproc > 1 ? dir / "rank0" : dir).string();
}

}  // namespace

AlignRun run_align(const AlignOptions& options, std::ostream& log) {
  AlignOptions o = options;
  if (const auto role = align_worker_role()) return run_as_rank(o, *role, log);
  Sides s = resolve_sides(o, &log);
  dump::StepSelection::parse(o.dump.steps);  // a malformed selection fails before anything runs
  AlignRun run;
  run.out_dir_generated = o.out.empty();
  run.out_dir = run.out_dir_generated ? fresh_out_dir() : o.out;
  settle_sides(s, o, run.out_dir);
  const std::string name_a = side_name("A", o.a), name_b = side_name("B", o.b);
  const train::CheckedConfig checked_a = check_side(s.a.config, name_a), checked_b = check_side(s.b.config, name_b);
  std::vector<std::string> notes_said;
  for (const auto& [checked, name] : {std::pair{&checked_a, &name_a}, std::pair{&checked_b, &name_b}}) {
    const std::string note = open_side_device(checked->config(), *name);
    if (note.empty()) continue;
    log << "note: " << *name << ": " << note << "\n";
    notes_said.push_back(note);
  }
  fs::create_directories(run.out_dir);
  if (o.base.weights_in.empty()) {
    try {
      write_initial_weights(checked_a.config(), run.out_dir);
    } catch (const c10::Error& e) {
      throw std::runtime_error("initial weights: " + first_line(e.what_without_backtrace()));
    }
  }
  log << "align: dumps in " << run.out_dir
      << (run.out_dir_generated ? " (a new directory under the current one; --out to choose)" : "") << "\n";
  log << "align: running A (" << o.a << ")\n";
  const std::string stopped_a = train_side(o, s.a, checked_a, "a", name_a, run.out_dir, log, notes_said);
  log << "align: running B (" << o.b << ")\n";
  const std::string stopped_b = train_side(o, s.b, checked_b, "b", name_b, run.out_dir, log, notes_said);

  compare::CompareOptions compare;
  compare.strict = o.strict;
  try {
    run.result = compare::compare_paths(compared_dump(run.out_dir, "a", s.a), compared_dump(run.out_dir, "b", s.b), compare);
  } catch (const std::exception& e) {
    // Both sides ran, but a dump they wrote cannot be read back ("cannot read A: ..."): no verdict.
    throw AlignSideFailed("the dumps in " + run.out_dir + " cannot be compared: " + first_line(e.what()));
  }
  if (!stopped_a.empty()) run.result.problems.push_back("run A stopped early: " + first_line(stopped_a));
  if (!stopped_b.empty()) run.result.problems.push_back("run B stopped early: " + first_line(stopped_b));
  if (!stopped_a.empty() || !stopped_b.empty()) run.result.agree = false;
  return run;
}

}  // namespace crosstrain::align
