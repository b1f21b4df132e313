#pragma once
// An output never overwrites an input, for the commands whose outputs and inputs are flags
// (train, op-check): checked in the front, before the engine starts or anything is written.
// Files (--save-weights, --step-log, --json) go through report::refuse_input_as_output and may not
// replace a file inside an input folder (a dataset's); folders
// the command fills (--dump, --profile, --checkpoint-dir) may neither be an input nor, for a
// dump or a recording, hold one (a dump writes index.jsonl and tensors/ into its folder and
// --dump-overwrite clears it); a cache folder (--jpeg-cache) may not be an input or lie inside an
// input folder (its .jpg files would become samples of the dataset). A breach is
// std::invalid_argument: one line, exit 2.
#include <string>
#include <utility>
#include <vector>

#include "tools/commands/commands.h"

namespace crosstrain::cli {

struct CommandPaths {
  std::vector<std::string> inputs;                              // files and folders read
  std::vector<std::string> sealed;                              // folders read throughout (a dump): nothing written inside
  std::vector<std::pair<std::string, std::string>> files;       // (flag, path) written
  std::vector<std::pair<std::string, std::string>> folders;     // (flag, dir) filled: no input inside
  std::vector<std::pair<std::string, std::string>> checkpoint;  // (flag, dir) that may hold --resume PATH
  std::vector<std::pair<std::string, std::string>> caches;      // (flag, dir) filled: never inside an input
};

void refuse_outputs_over_inputs(const CommandPaths& paths);

// The folder or file that a --data value names ("idx:DIR" -> DIR; "" for synthetic data).
std::string data_input_path(const std::string& data);

// The paths of train and op-check from their flags.
CommandPaths train_paths(const commands::TrainArgs& args);
CommandPaths op_check_paths(const commands::OpCheckArgs& args);

}  // namespace crosstrain::cli
