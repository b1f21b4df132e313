#include "tools/run/run_request.h"

#include <stdexcept>

namespace crosstrain::run {

void validate(const RunRequest& r) {
  if (r.command.empty() || r.command.front().empty())
    throw std::invalid_argument("run needs the command after '--' (usage: crosstrain run [OPTIONS] -- COMMAND [ARGS...])");
  check(r.options);
}

std::string agent_config_json(const RunRequest& r) { return r.options.to_json().dump(); }

Environment agent_environment(const RunRequest& r, const Environment& base, const std::string& boot_dir,
                              const std::string& state_dir) {
  Environment env = base;
  auto it = env.find("PYTHONPATH");
  env["PYTHONPATH"] = boot_dir + (it != env.end() && !it->second.empty() ? ":" + it->second : "");
  env["CROSSTRAIN_AGENT_CONFIG"] = agent_config_json(r);
  env["CROSSTRAIN_AGENT_STATE_DIR"] = state_dir;
  if (r.options.flag("deterministic") && !env.count("CUBLAS_WORKSPACE_CONFIG")) env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8";
  if (r.options.is_set("seed") && !env.count("PYTHONHASHSEED"))
    env["PYTHONHASHSEED"] = std::to_string(r.options.integer("seed") % 4294967296LL);
  return env;
}

}  // namespace crosstrain::run
