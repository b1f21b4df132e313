#include "tools/align/tensor_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tools/align/element_decode.h"

namespace crosstrain::align {

namespace {

constexpr size_t kChunk = 2048;

struct Accumulator {
  double sum = 0, sumsq = 0;
  double max = -std::numeric_limits<double>::infinity();
  double min = std::numeric_limits<double>::infinity();
  int64_t finite = 0, nan = 0, inf = 0;

  // x must hold n doubles. The fast path assumes every element is finite; a chunk holding any
  // NaN/Inf (rare) is redone element by element.
  void add(const double* x, size_t n) {
    int64_t bad = 0;
#pragma omp simd reduction(+ : bad)
    for (size_t i = 0; i < n; ++i) bad += (x[i] - x[i] != 0.0) ? 1 : 0;  // NaN and Inf give NaN
    if (bad == 0) {
      double s = 0, q = 0, hi = max, lo = min;
#pragma omp simd reduction(+ : s, q) reduction(max : hi) reduction(min : lo)
      for (size_t i = 0; i < n; ++i) {
        s += x[i];
        q += x[i] * x[i];
        hi = std::max(hi, x[i]);
        lo = std::min(lo, x[i]);
      }
      sum += s;
      sumsq += q;
      max = hi;
      min = lo;
      finite += static_cast<int64_t>(n);
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      double v = x[i];
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

}  // namespace

TensorStats compute_stats(DType type, const void* data, size_t numel) {
  Accumulator acc;
  double buf[kChunk];
  for (size_t off = 0; off < numel; off += kChunk) {
    size_t n = std::min(kChunk, numel - off);
    if (type == DType::Float64) {
      acc.add(static_cast<const double*>(data) + off, n);
    } else {
      decode_to_double(type, data, off, n, buf);
      acc.add(buf, n);
    }
  }
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

}  // namespace crosstrain::align
