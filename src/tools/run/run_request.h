#pragma once
// `crosstrain run [OPTIONS] -- COMMAND...` as data: what the in-process agent is asked to do (the
// options of python/crosstrain/options.json, see run_options.h) and the command it runs in.
// Torch-free: the agent is Python (python/crosstrain/), loaded into the command's Python processes
// through the environment built here, never by editing the user's files.
//
//   RunRequest r;  r.command = {"python", "train.py"};  r.options.set("dump", "dump_a");  r.options.set("seed", 0);
//   validate(r);                                   // std::invalid_argument for a caller mistake
//   Environment env = agent_environment(r, current, boot_dir, state_dir);
#include <map>
#include <string>
#include <vector>

#include "tools/run/run_options.h"

namespace crosstrain::run {

struct RunRequest {
  std::vector<std::string> command;  // argv of the user's command, argv[0] first
  AgentOptions options;
};

// Checks what can be checked before the command starts; std::invalid_argument naming the flag.
void validate(const RunRequest& r);

// The agent's options as the JSON object python/crosstrain/_config.py reads: every option.
std::string agent_config_json(const RunRequest& r);

using Environment = std::map<std::string, std::string>;

// The command's environment: `base` plus the agent's variables. boot_dir (the folder holding the
// agent's sitecustomize.py) goes first on PYTHONPATH; the agent reports into state_dir.
// --deterministic also sets CUBLAS_WORKSPACE_CONFIG (cuBLAS reads it when it starts) and --seed
// PYTHONHASHSEED, unless the caller set them.
Environment agent_environment(const RunRequest& r, const Environment& base, const std::string& boot_dir,
                              const std::string& state_dir);

}  // namespace crosstrain::run
