#include "cli/dump_flags.h"

#include "tools/align/shared_batches.h"

namespace crosstrain::cli {

void add_dump_flags(CLI::App* cmd, DumpFlags& f, bool with_dir) {
  const char* g = "Dump";
  if (with_dir) {
    cmd->add_option("--dump", f.dir, "Record module outputs, gradients and losses into DIR (docs/DUMP_FORMAT.md)")
        ->type_name("DIR")->group(g);
    cmd->add_flag("--dump-overwrite", f.overwrite, "Replace a dump already in the --dump directory")->group(g);
  }
  cmd->add_option("--dump-steps", f.steps, "Steps to dump: list and ranges, e.g. 0-2,10 ('' = every step)")
      ->capture_default_str()->group(g);
  cmd->add_option("--dump-mode", f.mode, "stats (statistics only) | tensors (statistics and .npy files)")
      ->capture_default_str()->check(CLI::IsMember({"stats", "tensors"}))->group(g);
  // Hidden: test aids.
  cmd->add_option("--perturb-module", f.perturb, "Testing: add noise of REL x mean|output| to MODULE's output (default 1e-2)")
      ->type_name("MODULE[=REL]")->group("");
  cmd->add_option("--inject-nan-module", f.inject_nan, "Testing: put a NaN into MODULE's output")->group("");
  cmd->add_option("--input-npy", f.input_npy, "Testing: DIR/images.npy and DIR/labels.npy are every step's batch")
      ->group("");
}

DumpAttachment attach_dump(const DumpFlags& f, const std::string& dir, const tools::TrainConfig& c,
                           tools::TrainHooks& hooks, bool host_batches) {
  DumpAttachment a;
  if (!dir.empty()) {
    tools::DumpSessionOptions o;
    o.dir = dir;
    o.mode = align::parse_dump_mode(f.mode);
    o.steps = align::StepSelection::parse(f.steps);
    o.meta = tools::dump_meta_for(c);
    o.overwrite = f.overwrite;
    a.session = std::make_unique<tools::DumpSession>(o);
    hooks.train_observers.push_back(a.session.get());
  }
  if (!f.perturb.empty()) {
    const auto eq = f.perturb.find('=');
    double rel = 1e-2;
    if (eq != std::string::npos) {
      try {
        rel = std::stod(f.perturb.substr(eq + 1));
      } catch (const std::exception&) {
        throw std::invalid_argument("--perturb-module: expected MODULE[=REL], got '" + f.perturb + "'");
      }
    }
    a.disturbances.push_back(std::make_unique<tools::ModuleDisturbance>(
        f.perturb.substr(0, eq), tools::ModuleDisturbance::Kind::Noise, rel));
  }
  if (!f.inject_nan.empty())
    a.disturbances.push_back(std::make_unique<tools::ModuleDisturbance>(f.inject_nan, tools::ModuleDisturbance::Kind::NaN));
  // After the dump: observers' on_exit runs last-registered first, so the dump sees the change.
  for (auto& d : a.disturbances) hooks.train_observers.push_back(d.get());
  if (!f.input_npy.empty()) {
    const std::string npy = f.input_npy;
    const int64_t classes = c.num_classes;
    const bool cl = c.channels_last;
    hooks.make_source = [npy, classes, cl](const std::string& device) {
      return tools::make_npy_batch_source(npy, device, classes, cl);
    };
  } else if (host_batches) {
    core::SyntheticOptions so;
    so.batch_size = c.batch_size;
    so.image_size = c.image_size;
    so.num_classes = c.num_classes;
    so.seed = c.seed;
    so.channels_last = c.channels_last;
    hooks.make_source = [so](const std::string& device) { return tools::make_host_synthetic_source(so, device); };
  }
  return a;
}

}  // namespace crosstrain::cli
