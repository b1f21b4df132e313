#pragma once
// The worker side of torchrun's contract: the environment a launcher (torchrun, `crosstrain launch`,
// a batch system) gives each process of a data-parallel job.
//
//   auto env = dist::WorkerEnv::from_environment();  // nullopt: not launched as a worker
//   env->rank, env->world_size, env->master_addr ...
//
// RANK and WORLD_SIZE make a process a worker; everything else has torchrun's defaults (LOCAL_RANK
// = RANK, MASTER_ADDR 127.0.0.1, MASTER_PORT 29500). A malformed value is a std::invalid_argument
// that names the variable. Torch-free.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace crosstrain::dist {

struct WorkerEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int group_rank = 0;             // the node's rank
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int restart_count = 0;          // TORCHELASTIC_RESTART_COUNT: 0 on the first start
  int max_restarts = 0;
  std::string run_id;             // TORCHELASTIC_RUN_ID
  bool use_agent_store = false;   // TORCHELASTIC_USE_AGENT_STORE: the launcher hosts the store

  // `lookup` returns a variable's value or null; the default reads the process environment.
  static std::optional<WorkerEnv> from(const std::function<const char*(const char*)>& lookup);
  static std::optional<WorkerEnv> from_environment();
  // One process, rank 0 of 1, store on the loopback (--distributed without a launcher).
  static WorkerEnv single();

  std::string describe() const;  // "rank 1 of 4 (local 1 of 2, node 0), store 127.0.0.1:29500"
};

}  // namespace crosstrain::dist
