#pragma once
// Dump flags of `train` and `align`, bound to dump::DumpOptions.
#include <CLI/CLI.hpp>

#include "tools/dump/trainer/dump_attachment.h"

namespace crosstrain::cli {

// with_dir: add --dump DIR and --dump-overwrite (train); align names its own directories.
void add_dump_flags(CLI::App* cmd, dump::DumpOptions& f, bool with_dir);

}  // namespace crosstrain::cli
