#include "tools/launch/worker_env.h"

#include <stdexcept>

extern char** environ;

namespace crosstrain::launch {

void validate(const LaunchShape& s) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("launch: " + what); };
  if (s.nproc_per_node < 1 || s.nproc_per_node > kMaxProcPerNode)
    fail("--nproc-per-node must be between 1 and " + std::to_string(kMaxProcPerNode) + ", got " +
         std::to_string(s.nproc_per_node));
  if (s.nnodes < 1 || s.nnodes > kMaxNodes)
    fail("--nnodes must be between 1 and " + std::to_string(kMaxNodes) + ", got " + std::to_string(s.nnodes));
  if (s.node_rank < 0 || s.node_rank >= s.nnodes)
    fail("--node-rank must be in [0, " + std::to_string(s.nnodes) + ") for --nnodes " + std::to_string(s.nnodes) +
         ", got " + std::to_string(s.node_rank));
  if (s.master_port < 0 || s.master_port > 65535)
    fail("--master-port must be between 0 and 65535, got " + std::to_string(s.master_port));
  if (s.master_port == 0 && s.nnodes > 1)
    fail("--master-port 0 (a free port) works on one node only: every node must be given the same port");
  if (s.master_addr.empty()) fail("--master-addr must not be empty");
  if (s.max_restarts < 0) fail("--max-restarts must be 0 or more, got " + std::to_string(s.max_restarts));
  if (s.run_id.empty()) fail("--rdzv-id must not be empty");
  if (static_cast<long long>(s.nproc_per_node) * s.nnodes > 1LL << 30) fail("the world size is too large");
}

bool sets_omp_threads(const LaunchShape& shape, const Environment& inherited) {
  return shape.nproc_per_node > 1 && inherited.count("OMP_NUM_THREADS") == 0;
}

Environment worker_environment(const LaunchShape& s, int local_rank, int restart_count, const Environment& inherited) {
  const int world = s.nnodes * s.nproc_per_node;
  const std::string rank = std::to_string(s.node_rank * s.nproc_per_node + local_rank);
  Environment env{
      {"RANK", rank},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"WORLD_SIZE", std::to_string(world)},
      {"LOCAL_WORLD_SIZE", std::to_string(s.nproc_per_node)},
      {"GROUP_RANK", std::to_string(s.node_rank)},
      {"GROUP_WORLD_SIZE", std::to_string(s.nnodes)},
      {"ROLE_NAME", kRoleName},
      {"ROLE_RANK", rank},  // one role: its ranks are the global ranks
      {"ROLE_WORLD_SIZE", std::to_string(world)},
      {"MASTER_ADDR", s.master_addr},
      {"MASTER_PORT", std::to_string(s.master_port)},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(restart_count)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(s.max_restarts)},
      {"TORCHELASTIC_RUN_ID", s.run_id},
      // No agent store here: rank 0 hosts the TCPStore at MASTER_ADDR:MASTER_PORT (plain env://).
      {"TORCHELASTIC_USE_AGENT_STORE", "False"},
  };
  auto user = [&](const char* name, const char* fallback) {
    auto it = inherited.find(name);
    env[name] = it != inherited.end() ? it->second : fallback;
  };
  user("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
  if (sets_omp_threads(s, inherited)) env["OMP_NUM_THREADS"] = "1";
  return env;
}

Environment current_environment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

}  // namespace crosstrain::launch
