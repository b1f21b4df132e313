#pragma once
// The random number generators a run draws from, as state: the CPU generator (torch.get_rng_state()'s
// 5056-byte tensor) and the training device's default generator (torch.cuda.get_rng_state() on CUDA;
// any backend whose generator implements get_state). Restoring both makes later draws repeat exactly.
#include <c10/core/Device.h>

#include "core/state_dict.h"

namespace crosstrain::core {

// {"cpu": uint8 tensor, "device": uint8 tensor or None, "device_type": "cuda" | "cpu" | ...}
StateDict rng_state_dict(c10::Device device);
// std::invalid_argument when the state was taken on another device type.
void load_rng_state_dict(const StateDict& state, c10::Device device);

}  // namespace crosstrain::core
