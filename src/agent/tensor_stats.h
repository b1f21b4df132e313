// The statistics of one tensor's elements, for the Python agent of `crosstrain run`
// (python/crosstrain/_native.py loads this library with ctypes; no libtorch, no Python headers, so
// one build serves every torch and every Python the user brings).
//
// Definitions are those of docs/DUMP_FORMAT.md and python/crosstrain/_stats.py: max and min of the
// finite elements, their sum and L2 norm accumulated in float64, NaN and Inf counts, and the count
// of finite elements. The elements are read in memory order: a tensor whose elements fill one
// block (contiguous, or any dense non-overlapping layout) is passed as that block, since none of
// the statistics depends on the order.
//
//   double out[CROSSTRAIN_STATS_FIELDS];
//   if (crosstrain_tensor_stats(t.data_ptr(), t.numel(), CROSSTRAIN_DTYPE_FLOAT32, out) == 0) ...
//
// The statistics are crosstrain::dump::compute_stats (tools/dump/tensor_stats.h), the C++ dump
// writer's: one definition for every writer of the format.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CROSSTRAIN_EXPORT __attribute__((visibility("default")))

enum {
  CROSSTRAIN_DTYPE_FLOAT32 = 0,
  CROSSTRAIN_DTYPE_FLOAT64 = 1,
  CROSSTRAIN_DTYPE_FLOAT16 = 2,
  CROSSTRAIN_DTYPE_BFLOAT16 = 3,
  CROSSTRAIN_DTYPE_INT64 = 4,
  CROSSTRAIN_DTYPE_INT32 = 5,
  CROSSTRAIN_DTYPE_UINT8 = 6,
  CROSSTRAIN_DTYPE_BOOL = 7,
};

#define CROSSTRAIN_STATS_FIELDS 7  // max, min, sum, norm, nan_count, inf_count, finite_count

// The version of this interface; the agent loads a library whose version it knows.
CROSSTRAIN_EXPORT int crosstrain_tensor_stats_version(void);

// Fills out[7] for n >= 1 elements at data (the sum is the finite elements' mean times their
// count). Returns 0, or -1 for an unknown dtype or n < 1 (out untouched). With no finite element,
// max, min, sum and norm are NaN.
CROSSTRAIN_EXPORT int crosstrain_tensor_stats(const void* data, int64_t n, int dtype, double* out);

#ifdef __cplusplus
}
#endif
