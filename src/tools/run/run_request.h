#pragma once
// `crosstrain run [OPTIONS] -- COMMAND...` as data: what the in-process agent is asked to do and the
// command it runs in. Torch-free: the agent is Python (python/crosstrain/), loaded into the command's
// Python processes through the environment built here, never by editing the user's files.
//
//   RunRequest r;  r.command = {"python", "train.py"};  r.dump = "dump_a";  r.seed = 0;
//   validate(r);                                   // std::invalid_argument for a caller mistake
//   Environment env = agent_environment(r, current, boot_dir, state_dir);
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace crosstrain::run {

inline constexpr int64_t kDefaultDumpMaxBytes = int64_t{10} << 30;  // 10 GiB

struct RunRequest {
  std::vector<std::string> command;  // argv of the user's command, argv[0] first
  // Dumps (docs/RUN.md, docs/DUMP_FORMAT.md).
  std::string dump;                  // directory; empty: no dump
  std::string dump_steps = "0";
  std::string dump_level = "module";  // module | op | both
  std::string dump_mode = "stats";    // stats | tensors
  std::string dump_ranks;             // "" = every rank
  std::string dump_filter;            // ECMAScript/Python regex on record names
  int64_t dump_max_bytes = kDefaultDumpMaxBytes;
  bool dump_overwrite = false;
  bool dump_optimizer_ops = false;    // operator level: the optimizer's operators too
  // Reproducibility.
  std::optional<int64_t> seed;
  bool deterministic = false;
  // Profiling (docs/RUN.md, "Profiling"): torch.profiler or torch_npu.profiler around the steps.
  std::string profile;               // trace directory; empty: no profiling
  int profile_wait = 1, profile_warmup = 1, profile_active = 3, profile_repeat = 1;
  bool profile_memory = false, profile_shapes = false, profile_stack = true;
  std::string profiler_level = "level1";  // Ascend: level0 | level1 | level2 | none
  std::string aic_metrics;                // Ascend: pipe-utilization, arithmetic-utilization, memory, ...
  bool l2_cache = false;                  // Ascend
  bool profile_overwrite = false;
  // Steps and checks.
  std::string step_marker;            // module:qualname
  bool stop_on_nonfinite = false;
  std::string test_perturb;           // test aid: RECORD_NAME=SCALE
  std::map<std::string, std::string> meta;  // free-form, into the dump header (e.g. precision)
};

// Checks what can be checked before the command starts; std::invalid_argument naming the flag.
void validate(const RunRequest& r);

// The agent's options as the JSON object python/crosstrain/_config.py reads.
std::string agent_config_json(const RunRequest& r);

using Environment = std::map<std::string, std::string>;

// The command's environment: `base` plus the agent's variables. boot_dir (the folder holding the
// agent's sitecustomize.py) goes first on PYTHONPATH; the agent reports into state_dir.
// --deterministic also sets CUBLAS_WORKSPACE_CONFIG (cuBLAS reads it when it starts) and --seed
// PYTHONHASHSEED, unless the caller set them.
Environment agent_environment(const RunRequest& r, const Environment& base, const std::string& boot_dir,
                              const std::string& state_dir);

}  // namespace crosstrain::run
