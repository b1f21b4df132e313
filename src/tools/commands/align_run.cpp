#include "tools/commands/align_run.h"

#include <ATen/Parallel.h>

#include <ctime>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "core/device.h"
#include "core/models.h"
#include "tools/train.h"
#include "tools/trainer.h"

namespace crosstrain::commands {

namespace {

namespace fs = std::filesystem;

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  throw std::invalid_argument(key + ": expected true or false, got '" + v + "'");
}

int parse_threads(const std::string& where, const std::string& value) {
  try {
    size_t used = 0;
    const int n = std::stoi(value, &used);
    if (used != value.size() || n < 0) throw std::invalid_argument("");
    return n;
  } catch (const std::exception&) {
    throw std::invalid_argument(where + ": expected a non-negative integer, got '" + value + "'");
  }
}

std::string fresh_out_dir() {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  std::string dir = std::string("align-") + stamp;
  for (int i = 1; fs::exists(dir); ++i) dir = std::string("align-") + stamp + "-" + std::to_string(i);
  return dir;
}

// The initial weights both sides load, from the shared configuration's seed.
std::string write_initial_weights(const tools::TrainConfig& base, const std::string& out) {
  core::ModelOptions mo;
  mo.num_classes = base.num_classes;
  mo.small_stem = base.small_stem;
  mo.base_width = base.base_width;
  mo.zero_init_residual = base.zero_init_residual;
  at::manual_seed(base.seed);
  auto model = core::create_model(base.model, mo);
  const std::string weights = (fs::path(out) / "initial_weights.pt").string();
  core::save_weights(*model, weights);
  return weights;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// "run B (device=cuda precision=bf16)", or "run B" for an empty spec.
std::string side_name(const std::string& side, const std::string& spec) {
  return "run " + side + (spec.empty() ? "" : " (" + spec + ")");
}

// The side's device must open before either side trains: a typo in B must not cost A's run. A
// side that loads a backend library is checked when it runs: loading it early would change the
// process A trains in (a backend's generators join every manual_seed).
void open_side_device(const tools::TrainConfig& c, const std::string& name) {
  if (!c.backend_libs.empty()) return;
  try {
    (void)core::DeviceContext::open(c.device);
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
std::string run_side(const AlignOptions& o, const tools::TrainConfig& c, const std::string& dir, bool disturbed,
                     const std::string& name, std::ostream& log) {
  tools::TrainHooks hooks;
  hooks.messages = &log;
  DumpOptions d = o.dump;
  d.overwrite = true;
  if (!disturbed) {
    d.perturb.clear();
    d.inject_nan.clear();
  }
  std::string stopped;
  try {
    DumpAttachment attachment = attach_dump(d, dir, c, hooks, /*host_batches=*/true);
    try {
      tools::run_training(c, hooks);
    } catch (const tools::NonFiniteLoss& e) {
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

tools::TrainConfig apply_align_side(const tools::TrainConfig& base, const std::string& side, const std::string& spec) {
  tools::TrainConfig c = base;
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
    else if (key == "threads") c.threads = parse_threads(where, value);
    else
      throw std::invalid_argument("--" + side + ": unknown key '" + key +
                                  "' (valid: device, precision, threads, channels_last, backend_lib, loss_scale)");
  }
  tools::validate_config(c);
  return c;
}

AlignRun run_align(const AlignOptions& options, std::ostream& log) {
  // Both sides train on the same synthetic batches: the defaults `train` gives synthetic data.
  AlignOptions o = options;
  if (o.base.num_classes == 0) o.base.num_classes = 1000;
  if (o.base.image_size == 0) o.base.image_size = 224;
  tools::TrainConfig sa = apply_align_side(o.base, "a", o.a);
  tools::TrainConfig sb = apply_align_side(o.base, "b", o.b);
  tools::check_threads_fit_machine(sa);
  tools::check_threads_fit_machine(sb);
  align::StepSelection::parse(o.dump.steps);  // a malformed selection fails before anything runs
  const std::string name_a = side_name("A", o.a), name_b = side_name("B", o.b);
  open_side_device(sa, name_a);
  open_side_device(sb, name_b);
  AlignRun run;
  run.out_dir_generated = o.out.empty();
  run.out_dir = run.out_dir_generated ? fresh_out_dir() : o.out;
  fs::create_directories(run.out_dir);
  // A thread count set for one side stays set in the process: a side without one gets the default
  // explicitly, so the order of the runs does not change what B measures.
  const int default_threads = at::get_num_threads();
  if (sa.threads == 0) sa.threads = default_threads;
  if (sb.threads == 0) sb.threads = default_threads;
  if (o.base.weights_in.empty()) {
    try {
      sa.weights_in = sb.weights_in = write_initial_weights(o.base, run.out_dir);
    } catch (const c10::Error& e) {
      throw std::runtime_error("initial weights: " + first_line(e.what_without_backtrace()));
    }
  }
  log << "align: dumps in " << run.out_dir
      << (run.out_dir_generated ? " (a new directory under the current one; --out to choose)" : "") << "\n";
  const std::string dir_a = (fs::path(run.out_dir) / "a").string(), dir_b = (fs::path(run.out_dir) / "b").string();
  log << "align: running A (" << o.a << ")\n";
  const std::string stopped_a = run_side(o, sa, dir_a, /*disturbed=*/false, name_a, log);
  log << "align: running B (" << o.b << ")\n";
  const std::string stopped_b = run_side(o, sb, dir_b, /*disturbed=*/true, name_b, log);

  align::CompareOptions compare;
  compare.strict = o.strict;
  try {
    run.result = align::compare_paths(dir_a, dir_b, compare);
  } catch (const std::exception& e) {
    // Both sides ran, but a dump they wrote cannot be read back ("cannot read A: ..."): no verdict.
    throw AlignSideFailed("the dumps in " + run.out_dir + " cannot be compared: " + first_line(e.what()));
  }
  if (!stopped_a.empty()) run.result.problems.push_back("run A stopped early: " + first_line(stopped_a));
  if (!stopped_b.empty()) run.result.problems.push_back("run B stopped early: " + first_line(stopped_b));
  if (!stopped_a.empty() || !stopped_b.empty()) run.result.agree = false;
  return run;
}

}  // namespace crosstrain::commands
