#pragma once
// The least peak memory a reduced-precision run of the same model and batch could reach, from the
// fp32 run beside it, so that a measured peak can be judged against what the precision allows.
// Torch-free: it reads the runs' results only.
//
//   fixed state  = fp32 master weights + buffers + gradients + optimizer state   (TrainResult's
//                  fixed_state, counted from the run's tensors; autocast shrinks none of it)
//   other (fp32) = fp32 peak - fixed state      (activations saved for backward, temporaries, the
//                                                batch, the logits and the loss)
//   floor        = fixed state + other (fp32) x element ratio   (bf16, fp16: 2/4; tf32: 4/4)
//
// What the floor assumes: all of the fixed state is held at the peak in both runs, and everything
// else the fp32 run held there would be stored in the 16-bit type. So above the floor, by design,
// are autocast's 16-bit copies of the weights (saved for backward), tensors autocast keeps in fp32
// (the fp32 input batch beside its 16-bit copy, the logits cast to fp32 for the loss, ops autocast
// runs in fp32), the loss scaler's few scalars and, on devices whose allocator rounds blocks,
// the rounding.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/train/train_config.h"

namespace crosstrain::bench {

struct MemoryFloor {
  std::string precision;            // the reduced-precision run's
  int64_t fixed_state_bytes = 0;
  int64_t fp32_peak_bytes = 0;
  int64_t fp32_other_bytes = 0;     // fp32 peak - fixed state, never below 0
  double element_ratio = 0;         // bytes per stored element against fp32's 4
  int64_t floor_bytes = 0;
  int64_t measured_bytes = 0;       // the run's peak
  double of_floor() const;          // measured / floor (0 when the floor is 0)
};

// Bytes per element a precision stores activations in, over fp32's: fp16 and bf16 0.5, tf32 1 (it
// computes in reduced precision and stores fp32); std::nullopt for fp32 and unknown names.
std::optional<double> element_ratio(const std::string& precision);

// The arithmetic above for one run.
MemoryFloor compute_floor(const std::string& precision, int64_t fp32_peak_bytes, int64_t fixed_state_bytes,
                          double element_ratio, int64_t measured_bytes);

// The floor of runs[index] against the first fp32 run among `runs`; std::nullopt when that run is
// fp32 itself, no run is fp32, or a peak was not measured. The fixed state is runs[index]'s own.
std::optional<MemoryFloor> memory_floor(const std::vector<train::TrainResult>& runs, size_t index);

}  // namespace crosstrain::bench
