#pragma once
// What `op-check` is asked to check. Torch-free, so the CLI binds its flags without libtorch.
#include <cstdint>
#include <string>
#include <vector>

namespace crosstrain::opcheck {

struct OpCheckOptions {
  std::string device = "cpu";
  std::string precision = "fp32";       // fp32 | tf32 | bf16 | fp16
  bool precision_given = false;         // --from-dump: without --precision each tensor keeps the run's dtype
  std::string filter;                   // substring of the op name; empty = all
  bool perf = false;                    // also time each case on the target
  int perf_iterations = 20;
  uint64_t seed = 0;
  std::vector<std::string> backend_libs;
  std::string from_dump;                // replay the operators of this operator-level dump instead
  int64_t top = 20;                     // --from-dump: worst operators shown on the console (0 = all)
};

}  // namespace crosstrain::opcheck
