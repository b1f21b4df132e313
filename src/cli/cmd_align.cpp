// `crosstrain align`: the same training on two setups (device, precision, threads, layout), both
// dumped, then compared: does B compute what A computes, and if not, where do they first part?
#include <ATen/Parallel.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "cli/dump_flags.h"
#include "cli/train_flags.h"
#include "core/models.h"
#include "report/output.h"
#include "tools/align/compare_report.h"
#include "tools/align/dump_compare.h"
#include "tools/train.h"

namespace crosstrain::cli {

namespace {

namespace fs = std::filesystem;

struct AlignFlags {
  tools::TrainConfig base;
  std::string a, b, out, json_path, html_path;
  DumpFlags dump;
  bool strict = false;
};

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  throw std::invalid_argument(key + ": expected true or false, got '" + v + "'");
}

// "device=cpu precision=bf16 threads=2" applied over the shared configuration.
tools::TrainConfig apply_side(const tools::TrainConfig& base, const std::string& side, const std::string& spec) {
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
    else if (key == "threads") {
      try {
        size_t used = 0;
        c.threads = std::stoi(value, &used);
        if (used != value.size() || c.threads < 0) throw std::invalid_argument("");
      } catch (const std::exception&) {
        throw std::invalid_argument(where + ": expected a non-negative integer, got '" + value + "'");
      }
    } else {
      throw std::invalid_argument("--" + side + ": unknown key '" + key +
                                  "' (valid: device, precision, threads, channels_last, backend_lib, loss_scale)");
    }
  }
  tools::validate_config(c);
  return c;
}

std::string fresh_out_dir() {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  std::string dir = std::string("align-") + stamp;
  for (int i = 1; fs::exists(dir); ++i) dir = std::string("align-") + stamp + "-" + std::to_string(i);
  return dir;
}

struct SideOutcome {
  std::string stopped;  // why the run ended early (its dump is still compared)
  double final_loss = 0;
};

SideOutcome run_side(const AlignFlags& f, const tools::TrainConfig& c, const std::string& dir, bool disturbed) {
  tools::TrainHooks hooks;
  hooks.messages = &std::cerr;
  DumpFlags d = f.dump;
  d.overwrite = true;
  if (!disturbed) {
    d.perturb.clear();
    d.inject_nan.clear();
  }
  auto attachment = attach_dump(d, dir, c, hooks, /*host_batches=*/true);
  SideOutcome out;
  try {
    auto r = tools::run_training(c, hooks);
    out.final_loss = r.final_loss;
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::runtime_error& e) {
    out.stopped = e.what();
  }
  attachment.session->close();
  return out;
}

void run_align(const AlignFlags& f) {
  tools::TrainConfig base = f.base;
  const tools::TrainConfig ca = apply_side(base, "a", f.a);
  const tools::TrainConfig cb = apply_side(base, "b", f.b);
  align::StepSelection::parse(f.dump.steps);
  const bool default_out = f.out.empty();
  const std::string out = default_out ? fresh_out_dir() : f.out;
  fs::create_directories(out);
  // One set of initial weights for both sides, written once on the host: device RNGs and thread
  // counts then cannot make the starting points differ.
  tools::TrainConfig sa = ca, sb = cb;
  // A thread count set for one side stays set in the process: a side without one gets the default
  // explicitly, so the order of the runs does not change what B measures.
  const int default_threads = at::get_num_threads();
  if (sa.threads == 0) sa.threads = default_threads;
  if (sb.threads == 0) sb.threads = default_threads;
  if (base.weights_in.empty()) {
    core::ModelOptions mo;
    mo.num_classes = base.num_classes;
    mo.small_stem = base.small_stem;
    mo.base_width = base.base_width;
    mo.zero_init_residual = base.zero_init_residual;
    at::manual_seed(base.seed);
    auto model = core::create_model(base.model, mo);
    const std::string weights = (fs::path(out) / "initial_weights.pt").string();
    core::save_weights(*model, weights);
    sa.weights_in = sb.weights_in = weights;
  }
  std::cerr << "align: dumps in " << out << (default_out ? " (a new directory under the current one; --out to choose)" : "")
            << "\n";
  const std::string dir_a = (fs::path(out) / "a").string(), dir_b = (fs::path(out) / "b").string();
  std::cerr << "align: running A (" << f.a << ")\n";
  const SideOutcome ra = run_side(f, sa, dir_a, false);
  std::cerr << "align: running B (" << f.b << ")\n";
  const SideOutcome rb = run_side(f, sb, dir_b, true);

  align::CompareOptions opt;
  opt.strict = f.strict;
  auto result = align::compare_paths(dir_a, dir_b, opt);
  if (!ra.stopped.empty()) result.problems.push_back("run A stopped early: " + ra.stopped.substr(0, ra.stopped.find('\n')));
  if (!rb.stopped.empty()) result.problems.push_back("run B stopped early: " + rb.stopped.substr(0, rb.stopped.find('\n')));
  if (!ra.stopped.empty() || !rb.stopped.empty()) result.agree = false;
  if (!f.json_path.empty()) {
    auto doc = align::compare_to_json(result);
    doc["kind"] = "align";
    doc["a"] = f.a;
    doc["b"] = f.b;
    doc["out"] = out;
    report::write_json(doc, f.json_path);
  }
  if (!f.html_path.empty()) report::write_file_atomic(f.html_path, align::compare_to_html(result));
  std::ostream& os = report::json_to_stdout(f.json_path) ? std::cerr : std::cout;
  os << "A: " << f.a << "\nB: " << f.b << "\n" << align::render_compare_console(result);
  os << (result.agree ? "align: the runs agree\n" : "align: the runs differ\n");
  if (!result.agree) throw ExitStatus{1};
}

}  // namespace

void add_align_command(CLI::App& app) {
  auto f = std::make_shared<AlignFlags>();
  auto& c = f->base;
  c.steps = 3;
  c.warmup_steps = 0;
  f->dump.mode = "tensors";
  auto* cmd = app.add_subcommand(
      "align",
      "Train the same model twice (same seed, weights and batches) on two setups, dump both and compare "
      "them: the verdict and the first divergence. Exit 0 when the runs agree, 1 when they differ.");
  cmd->add_option("--a", f->a, "Reference setup, e.g. \"device=cpu precision=fp32\" (keys: device, precision, "
                               "threads, channels_last, backend_lib, loss_scale)")->required();
  cmd->add_option("--b", f->b, "Candidate setup, e.g. \"device=cpu precision=bf16\"")->required();
  cmd->add_option("--out", f->out, "Directory for the dumps (default: a new align-<time> directory here)")
      ->type_name("DIR");
  add_json_option(cmd, f->json_path);
  cmd->add_option("--html", f->html_path, "Write the comparison as a self-contained HTML page")->type_name("PATH");
  cmd->add_flag("--strict", f->strict, "Warnings make the runs differ");
  const char* model = "Model";
  cmd->add_option("--model", c.model, "resnet18 | resnet34 | resnet50 | resnet101 | resnet152")->capture_default_str()->group(model);
  cmd->add_option("--weights", c.weights_in, "Initial state dict for both sides (default: from --seed)")
      ->type_name("PATH")->group(model);
  const char* run = "Run";
  cmd->add_option("--batch-size", c.batch_size, "Images per step")->capture_default_str()->check(CLI::PositiveNumber)->group(run);
  cmd->add_option("--image-size", c.image_size, "Square input size in pixels")->capture_default_str()->check(CLI::Range(8, 4096))->group(run);
  cmd->add_option("--steps", c.steps, "Training steps per side (all loss-logged)")->capture_default_str()
      ->check(CLI::PositiveNumber)->group(run);
  add_common_train_flags(cmd, c);
  add_dump_flags(cmd, f->dump, /*with_dir=*/false);
  cmd->callback([f] { run_align(*f); });
}

}  // namespace crosstrain::cli
