#pragma once
// torchrun's symbolic --nproc-per-node values, resolved without libtorch from what the node shows:
//
//   auto nodes = visible_devices(current_environment());   // CPUs, CUDA GPUs, Ascend NPUs
//   int n = resolve_nproc_per_node("gpu", nodes);           // 8 on an 8-GPU node
//
//   N      that many workers
//   cpu    one per CPU this process may run on (its affinity mask)
//   gpu    one per visible CUDA GPU (also "cuda"); an error when there is none
//   npu    one per visible Ascend NPU; an error when there is none
//   auto   GPUs if any, else NPUs if any, else CPUs (torchrun's order: accelerators first)
//
// Visible: the device files (/dev/nvidiaN, /dev/davinciN) narrowed by CUDA_VISIBLE_DEVICES or
// ASCEND_RT_VISIBLE_DEVICES when set, read as the runtimes do: entries up to the first invalid one.
#include <string>

#include "tools/launch/worker_env.h"

namespace crosstrain::launch {

struct NodeDevices {
  int cpus = 1;
  int cuda = 0;
  int npu = 0;
};

// `dev_dir` is where the device files are looked for (tests pass a folder of their own).
NodeDevices visible_devices(const Environment& env, const std::string& dev_dir = "/dev");

// True for a count from 1 to kMaxProcPerNode or one of the words above: what can be checked before
// the devices are looked at.
bool is_nproc_spec(const std::string& spec);

// The number of workers for `spec`; std::invalid_argument naming the flag when it is not a number
// from 1 to kMaxProcPerNode or one of the words above, or when the devices it names are absent.
int resolve_nproc_per_node(const std::string& spec, const NodeDevices& devices);

// How many entries of a *_VISIBLE_DEVICES list a runtime uses when the node has `physical`
// devices: the empty list is none; reading stops at the first entry that is not a device index
// below `physical` (or, for CUDA, a GPU-/MIG- identifier).
int visible_count(const std::string& list, int physical, bool uuids_allowed);

}  // namespace crosstrain::launch
