#include "tools/dump/tensor_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tools/dump/element_decode.h"

namespace crosstrain::dump {

namespace {

constexpr size_t kChunk = kDecodeChunk;

struct Accumulator {
  double sum = 0, sumsq = 0;
  double max = -std::numeric_limits<double>::infinity();
  double min = std::numeric_limits<double>::infinity();
  int64_t finite = 0, nan = 0, inf = 0;

  // The fast path assumes every element is finite and commits nothing when one is not (rare);
  // that chunk is then redone element by element.
  template <typename T>
  void add(const T* x, size_t n) {
    double s = 0, q = 0, hi = max, lo = min, nonfinite = 0;
#pragma omp simd reduction(+ : s, q, nonfinite) reduction(max : hi) reduction(min : lo)
    for (size_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(x[i]);
      nonfinite += v - v;  // NaN as soon as one element is NaN or Inf
      s += v;
      q += v * v;
      hi = v > hi ? v : hi;
      lo = v < lo ? v : lo;
    }
    if (nonfinite == 0.0) {
      sum += s;
      sumsq += q;
      max = hi;
      min = lo;
      finite += static_cast<int64_t>(n);
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(x[i]);
      if (std::isnan(v)) {
        ++nan;
      } else if (std::isinf(v)) {
        ++inf;
      } else {
        sum += v;
        sumsq += v * v;
        max = std::max(max, v);
        min = std::min(min, v);
        ++finite;
      }
    }
  }
};

CROSSTRAIN_SIMD_CLONES void stream_stats(DType type, const void* data, size_t numel, Accumulator& acc) {
  double buf[kChunk];
  for (size_t off = 0; off < numel; off += kChunk) {
    size_t n = std::min(kChunk, numel - off);
    if (type == DType::Float64) {
      acc.add(static_cast<const double*>(data) + off, n);
    } else if (type == DType::Float32) {
      acc.add(static_cast<const float*>(data) + off, n);
    } else {
      decode_to_double(type, data, off, n, buf);
      acc.add(static_cast<const double*>(buf), n);
    }
  }
}

}  // namespace

TensorStats compute_stats(DType type, const void* data, size_t numel) {
  Accumulator acc;
  stream_stats(type, data, numel, acc);
  TensorStats s;
  s.numel = static_cast<int64_t>(numel);
  s.nan_count = acc.nan;
  s.inf_count = acc.inf;
  if (acc.finite > 0) {
    s.max = acc.max;
    s.min = acc.min;
    s.mean = acc.sum / static_cast<double>(acc.finite);
    s.norm = std::sqrt(acc.sumsq);
  }
  return s;
}

}  // namespace crosstrain::dump
