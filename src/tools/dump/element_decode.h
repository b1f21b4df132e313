#pragma once
// Reading tensor elements of any dump dtype as double, a chunk at a time. The compare engine and
// the statistics work in double whatever the stored type, so that float16/bfloat16/integer data
// take the same code path as float32, and so that sums over 100M elements stay accurate.
#include <cstddef>
#include <cstdint>

#include "tools/dump/dump_format.h"

namespace crosstrain::dump {

float half_to_float(uint16_t bits);
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_half(float f);        // round to nearest even; for tests and tools
uint16_t float_to_bfloat16(float f);    // round to nearest even; NaN stays NaN

// Elements decoded per call by the streaming kernels (statistics, comparison): 16 KiB of doubles.
constexpr size_t kDecodeChunk = 2048;

// The streaming kernels are built twice on x86-64, for AVX2 and for the baseline, and the loader
// picks one per machine: the same binary runs everywhere and uses 4-wide double math where it can.
#if defined(__x86_64__) && defined(__GNUC__)
#define CROSSTRAIN_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CROSSTRAIN_SIMD_CLONES
#endif

// out[i] = element (offset + i) of `data` (an array of `type`), for i < n.
void decode_to_double(DType type, const void* data, size_t offset, size_t n, double* out);

}  // namespace crosstrain::dump
