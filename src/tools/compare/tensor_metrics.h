#pragma once
// Element-wise agreement of two tensors of the same number of elements (any dump dtypes, e.g.
// float32 against bfloat16), accumulated in double in one streaming pass, split over threads
// for large tensors. Side A is the reference: relative errors divide by |a|.
//
// Non-finite values: a position where both sides hold the same NaN/+Inf/-Inf counts as matched
// and is left out of the metrics; a position where only one side is non-finite (or they differ)
// is a mismatch. All other metrics are over positions finite on both sides.
#include <cstddef>
#include <cstdint>

#include "tools/dump/dump_format.h"

namespace crosstrain::compare {

using dump::DType;

struct TensorMetrics {
  int64_t numel = 0;
  int64_t finite_pairs = 0;        // positions finite on both sides (the metrics' population)
  int64_t nonfinite_matched = 0;
  int64_t nonfinite_mismatched = 0;
  double cosine = 1.0;             // 1 when both sides are all zero; 0 when exactly one is
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;      // max |a-b| / |a| over elements with a != 0
  double rmse = 0.0;
  double share_rel_1e3 = 1.0;      // share of finite pairs with relative error under 1e-3
  double share_rel_5e3 = 1.0;      // ... under 5e-3
  bool exact() const { return max_abs_error == 0.0 && nonfinite_mismatched == 0; }
};

// `threads` <= 0 uses the hardware concurrency; small tensors always run on the calling thread.
TensorMetrics compare_arrays(DType type_a, const void* a, DType type_b, const void* b, size_t numel,
                             int threads = 0);

}  // namespace crosstrain::compare
