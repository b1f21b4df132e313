#pragma once
// One-pass statistics of a tensor in any dump dtype (max, min, mean, L2 norm over the finite
// elements; NaN and Inf counted apart). Accumulates in double over sixteen fixed lanes per chunk; the
// summation order depends on the data only, so the same data gives the same bits on every machine
// and vector width. Float32 runs at memory speed (12-14 GB/s from memory on one core of a 2-core
// EPYC VM with AVX2, 22 GB/s from cache: bench/compare_bench.cpp).
#include <cstddef>

#include "tools/dump/dump_format.h"

namespace crosstrain::dump {

TensorStats compute_stats(DType type, const void* data, size_t numel);

}  // namespace crosstrain::dump
