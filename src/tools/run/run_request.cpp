#include "tools/run/run_request.h"

#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>

#include "tools/align/dump_format.h"

namespace crosstrain::run {

namespace {

void check_list(const std::string& text, const std::string& flag) {
  try {
    (void)align::StepSelection::parse(text);
  } catch (const std::exception& e) {
    throw std::invalid_argument(flag + ": " + e.what());
  }
}

void check_one_of(const std::string& value, const std::vector<std::string>& allowed, const std::string& flag) {
  for (const auto& a : allowed)
    if (value == a) return;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw std::invalid_argument(flag + " must be one of " + list + ", not '" + value + "'");
}

}  // namespace

void validate(const RunRequest& r) {
  if (r.command.empty() || r.command.front().empty())
    throw std::invalid_argument("run needs the command after '--' (usage: crosstrain run [OPTIONS] -- COMMAND [ARGS...])");
  check_one_of(r.dump_level, {"module", "op", "both"}, "--dump-level");
  check_one_of(r.dump_mode, {"stats", "tensors"}, "--dump-mode");
  check_list(r.dump_steps, "--dump-steps");
  check_list(r.dump_ranks, "--dump-ranks");
  // --dump-filter is a Python regular expression (re.search on record names): the agent checks it
  // with Python's re before the command runs (a bad one is one line and exit 2 from there).
  if (r.dump_max_bytes <= 0) throw std::invalid_argument("--dump-max-bytes must be positive");
  static const std::regex marker(R"([A-Za-z_][\w.]*:[A-Za-z_][\w.]*)");
  if (!r.step_marker.empty() && !std::regex_match(r.step_marker, marker))
    throw std::invalid_argument("--step-marker takes module:function (e.g. train:train_step or __main__:step), not '" +
                                r.step_marker + "'");
  if (!r.test_perturb.empty()) {
    const auto eq = r.test_perturb.rfind('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--test-perturb takes RECORD=SCALE");
    try {
      (void)std::stod(r.test_perturb.substr(eq + 1));
    } catch (const std::exception&) {
      throw std::invalid_argument("--test-perturb takes RECORD=SCALE with a number, not '" + r.test_perturb + "'");
    }
  }
  if (!r.profile.empty()) {
    if (r.profile_active < 1)
      throw std::invalid_argument("--profile-active must be at least 1: a schedule without active steps records nothing");
    if (r.profile_wait < 0 || r.profile_warmup < 0 || r.profile_repeat < 0)
      throw std::invalid_argument("--profile-wait, --profile-warmup and --profile-repeat must be 0 or more");
    check_one_of(r.profiler_level, {"level0", "level1", "level2", "none"}, "--profiler-level");
    if (!r.aic_metrics.empty())
      check_one_of(r.aic_metrics, {"pipe-utilization", "arithmetic-utilization", "memory", "memory-l0", "memory-ub",
                                   "resource-conflict-ratio", "l2-cache", "none"},
                   "--aic-metrics");
  }
  const bool dump_flags = r.dump_steps != "0" || r.dump_level != "module" || r.dump_mode != "stats" ||
                          !r.dump_ranks.empty() || !r.dump_filter.empty() || r.dump_overwrite || r.dump_optimizer_ops;
  if (dump_flags && r.dump.empty())
    throw std::invalid_argument("--dump-steps, --dump-level, --dump-mode, --dump-ranks, --dump-filter, "
                                "--dump-overwrite and --dump-optimizer-ops need --dump DIR");
}

std::string agent_config_json(const RunRequest& r) {
  nlohmann::json j = nlohmann::json::object();
  if (!r.dump.empty()) {
    j["dump"] = r.dump;
    j["dump_steps"] = r.dump_steps;
    j["dump_level"] = r.dump_level;
    j["dump_mode"] = r.dump_mode;
    j["dump_ranks"] = r.dump_ranks;
    j["dump_filter"] = r.dump_filter;
    j["dump_max_bytes"] = r.dump_max_bytes;
    j["dump_overwrite"] = r.dump_overwrite;
    j["dump_optimizer_ops"] = r.dump_optimizer_ops;
  }
  if (!r.profile.empty()) {
    j["profile"] = r.profile;
    j["profile_wait"] = r.profile_wait;
    j["profile_warmup"] = r.profile_warmup;
    j["profile_active"] = r.profile_active;
    j["profile_repeat"] = r.profile_repeat;
    j["profile_memory"] = r.profile_memory;
    j["profile_shapes"] = r.profile_shapes;
    j["profile_stack"] = r.profile_stack;
    j["profiler_level"] = r.profiler_level;
    j["aic_metrics"] = r.aic_metrics;
    j["l2_cache"] = r.l2_cache;
  }
  if (r.seed) j["seed"] = *r.seed;
  if (r.deterministic) j["deterministic"] = true;
  if (!r.step_marker.empty()) j["step_marker"] = r.step_marker;
  if (r.stop_on_nonfinite) j["stop_on_nonfinite"] = true;
  if (!r.test_perturb.empty()) j["test_perturb"] = r.test_perturb;
  if (!r.meta.empty()) j["meta"] = r.meta;
  return j.dump();
}

Environment agent_environment(const RunRequest& r, const Environment& base, const std::string& boot_dir,
                              const std::string& state_dir) {
  Environment env = base;
  auto it = env.find("PYTHONPATH");
  env["PYTHONPATH"] = boot_dir + (it != env.end() && !it->second.empty() ? ":" + it->second : "");
  env["CROSSTRAIN_AGENT_CONFIG"] = agent_config_json(r);
  env["CROSSTRAIN_AGENT_STATE_DIR"] = state_dir;
  if (r.deterministic && !env.count("CUBLAS_WORKSPACE_CONFIG")) env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8";
  if (r.seed && !env.count("PYTHONHASHSEED")) env["PYTHONHASHSEED"] = std::to_string(*r.seed % 4294967296LL);
  return env;
}

}  // namespace crosstrain::run
