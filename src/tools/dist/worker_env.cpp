#include "tools/dist/worker_env.h"

#include <cstdlib>
#include <limits>
#include <stdexcept>

namespace crosstrain::dist {

namespace {

int parse_int(const char* name, const char* text, int lo, int hi) {
  const std::string s = text;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
    throw std::invalid_argument(std::string("environment variable ") + name + "='" + s.substr(0, 40) +
                                "' is not a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(v);
}

}  // namespace

std::optional<WorkerEnv> WorkerEnv::from(const std::function<const char*(const char*)>& get) {
  const char* rank = get("RANK");
  const char* world = get("WORLD_SIZE");
  if (!rank && !world) return std::nullopt;
  if (!rank || !world)
    throw std::invalid_argument(std::string("environment variable ") + (rank ? "WORLD_SIZE" : "RANK") +
                                " is missing: a worker needs both RANK and WORLD_SIZE (as torchrun sets them)");
  constexpr int kMaxWorld = 1 << 20;
  WorkerEnv e;
  e.world_size = parse_int("WORLD_SIZE", world, 1, kMaxWorld);
  e.rank = parse_int("RANK", rank, 0, e.world_size - 1);
  auto int_or = [&](const char* name, int fallback, int lo, int hi) {
    const char* v = get(name);
    return v && *v ? parse_int(name, v, lo, hi) : fallback;
  };
  e.local_world_size = int_or("LOCAL_WORLD_SIZE", e.world_size, 1, e.world_size);
  e.local_rank = int_or("LOCAL_RANK", e.rank % e.local_world_size, 0, e.local_world_size - 1);
  e.group_rank = int_or("GROUP_RANK", e.rank / e.local_world_size, 0, kMaxWorld);
  e.master_port = int_or("MASTER_PORT", 29500, 1, 65535);
  e.restart_count = int_or("TORCHELASTIC_RESTART_COUNT", 0, 0, std::numeric_limits<int>::max());
  e.max_restarts = int_or("TORCHELASTIC_MAX_RESTARTS", 0, 0, std::numeric_limits<int>::max());
  if (const char* a = get("MASTER_ADDR"); a && *a) e.master_addr = a;
  if (const char* id = get("TORCHELASTIC_RUN_ID")) e.run_id = id;
  if (const char* s = get("TORCHELASTIC_USE_AGENT_STORE")) {
    const std::string v = s;
    e.use_agent_store = v == "True" || v == "true" || v == "1";
  }
  return e;
}

std::optional<WorkerEnv> WorkerEnv::from_environment() {
  return from([](const char* name) -> const char* { return std::getenv(name); });
}

WorkerEnv WorkerEnv::single() { return WorkerEnv{}; }

std::string WorkerEnv::describe() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(world_size) + " (local " + std::to_string(local_rank) +
         " of " + std::to_string(local_world_size) + ", node " + std::to_string(group_rank) + "), store " + master_addr +
         ":" + std::to_string(master_port);
}

}  // namespace crosstrain::dist
