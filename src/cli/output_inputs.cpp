#include "cli/output_inputs.h"

#include <filesystem>
#include <stdexcept>

#include "report/input_file.h"
#include "report/output.h"

namespace crosstrain::cli {

namespace fs = std::filesystem;

std::string data_input_path(const std::string& data) {
  const size_t colon = data.find(':');
  if (colon == std::string::npos) return "";
  const std::string kind = data.substr(0, colon);
  return kind == "synthetic" ? "" : data.substr(colon + 1);
}

void refuse_outputs_over_inputs(const CommandPaths& paths) {
  std::vector<std::string> inputs;
  for (const auto& in : paths.inputs)
    if (!in.empty()) inputs.push_back(in);
  for (const auto& [flag, path] : paths.files) {
    report::refuse_input_as_output(flag, path, inputs);
    // A file that exists inside an input folder (a dataset's file) is an input too.
    std::error_code ec;
    if (!path.empty() && path != "-" && fs::exists(path, ec))
      for (const auto& in : inputs)
        if (fs::is_directory(in, ec) && report::path_within(path, in))
          throw std::invalid_argument(flag + " " + path + " would write into the input " + in +
                                      " (it replaces a file of that folder): choose another path");
    for (const auto& dir : paths.sealed)
      if (!path.empty() && path != "-" && !dir.empty() && report::path_within(path, dir))
        throw std::invalid_argument(flag + " " + path + " would write into the input " + dir +
                                    " (a dump is read by the names inside it): choose a path outside it");
  }
  for (const auto& [flag, dir] : paths.checkpoint) report::refuse_input_as_output(flag, dir, inputs);
  for (const auto& [flag, dir] : paths.caches) {
    if (dir.empty()) continue;
    report::refuse_input_as_output(flag, dir, inputs);
    std::error_code ec;
    for (const auto& in : inputs)
      if (fs::is_directory(in, ec) && report::path_within(dir, in))
        throw std::invalid_argument(flag + " " + dir + " lies inside the input " + in +
                                    " (its files would be read as part of it): choose a folder outside the inputs");
  }
  for (const auto& [flag, dir] : paths.folders) {
    if (dir.empty()) continue;
    report::refuse_input_as_output(flag, dir, inputs);
    for (const auto& in : inputs)
      if (report::path_within(in, dir))
        throw std::invalid_argument(flag + " " + dir + " would write into a folder that holds the input " + in +
                                    " (one of the files read): choose a folder outside the inputs");
  }
}

CommandPaths train_paths(const commands::TrainArgs& args) {
  const auto& c = args.config;
  CommandPaths p;
  p.inputs = {c.weights_in, data_input_path(c.data), c.val_root, args.dump.input_npy,
              c.resume == "auto" ? std::string() : c.resume};
  p.files = {{"--save-weights", c.weights_out}, {"--step-log", c.log_path}, {"--json", args.json}};
  p.folders = {{"--dump", args.dump.dir}, {"--profile", c.profile.dir}};
  p.checkpoint = {{"--checkpoint-dir", c.checkpoint_dir}};
  p.caches = {{"--jpeg-cache", c.jpeg_cache}};
  return p;
}

CommandPaths op_check_paths(const commands::OpCheckArgs& args) {
  CommandPaths p;
  p.sealed = {args.options.from_dump};
  p.inputs = {args.options.from_dump};
  p.files = {{"--json", args.json}};
  return p;
}

}  // namespace crosstrain::cli
