#include "cli/dump_flags.h"

namespace crosstrain::cli {

void add_dump_flags(CLI::App* cmd, dump::DumpOptions& f, bool with_dir) {
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

}  // namespace crosstrain::cli
