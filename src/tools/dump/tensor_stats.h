#pragma once
// One-pass statistics of a tensor in any dump dtype (max, min, mean, L2 norm over the finite
// elements; NaN and Inf counted apart). Accumulates in double; the chunked summation order is fixed,
// so the same data always gives the same bits. Float32 runs at memory speed (100M elements in a
// fraction of a second on one core).
#include <cstddef>

#include "tools/dump/dump_format.h"

namespace crosstrain::dump {

TensorStats compute_stats(DType type, const void* data, size_t numel);

}  // namespace crosstrain::dump
