#pragma once
// What a launched worker is told through its environment: the variables torchrun sets for each
// worker (its env:// contract), computed from the launch's shape, one worker at a time.
//
//   LaunchShape shape{.nproc_per_node = 2, .nnodes = 1, .node_rank = 0, ...};
//   validate(shape);                                   // std::invalid_argument on a caller mistake
//   for (int i = 0; i < shape.nproc_per_node; ++i)
//     auto vars = worker_environment(shape, i, restart_count, inherited);
//
// Torch-free: the launcher runs without libtorch. docs/DISTRIBUTED.md ("launch") lists the contract.
#include <map>
#include <string>

namespace crosstrain::launch {

constexpr int kMaxProcPerNode = 1024;
constexpr int kMaxNodes = 65536;
constexpr int kDefaultMasterPort = 29500;
constexpr const char* kDefaultMasterAddr = "127.0.0.1";
constexpr const char* kDefaultRunId = "none";  // torchrun's default --rdzv-id
constexpr const char* kRoleName = "default";   // torchrun's only role

// The static shape of a launch: the same on every node except node_rank.
struct LaunchShape {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = kDefaultMasterAddr;
  int master_port = kDefaultMasterPort;  // 0 asks for a free port (single node only)
  int max_restarts = 0;
  std::string run_id = kDefaultRunId;
};

// Throws std::invalid_argument naming the flag when the shape cannot be launched.
void validate(const LaunchShape& shape);

// Variables a worker gets on top of the launcher's own environment.
using Environment = std::map<std::string, std::string>;

// The variables for local worker `local_rank` of `shape` (whose master_port is already resolved)
// on attempt `restart_count`. `inherited` is the launcher's environment: values a user set there
// win for OMP_NUM_THREADS and TORCH_NCCL_ASYNC_ERROR_HANDLING, as under torchrun.
Environment worker_environment(const LaunchShape& shape, int local_rank, int restart_count, const Environment& inherited);

// True when the launcher sets OMP_NUM_THREADS=1 itself (more than one local worker and the user
// did not set it), so it can say so once.
bool sets_omp_threads(const LaunchShape& shape, const Environment& inherited);

// The process's environment as a map (environ).
Environment current_environment();

}  // namespace crosstrain::launch
