#include "tools/dump/tensor_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tools/dump/element_decode.h"

namespace crosstrain::dump {

namespace {

constexpr size_t kChunk = kDecodeChunk;

// Lanes of the fast path: element i of a chunk goes to lane i % kLanes. Sixteen independent
// float64 sums and sums of squares are four AVX2 vectors each (two on AVX-512, eight with SSE2), so
// the adds do not wait on one another; since lane j always takes the same elements and the lanes
// are added in one fixed order, the result is the same to the bit whatever the vector width.
constexpr size_t kLanes = 16;

struct Accumulator {
  double sum = 0, sumsq = 0;
  double max = -std::numeric_limits<double>::infinity();
  double min = std::numeric_limits<double>::infinity();
  int64_t finite = 0, nan = 0, inf = 0;

  // The fast path assumes every element is finite and commits nothing when one is not (rare): an
  // Inf or NaN makes the chunk's sum or sum of squares non-finite, or shows as its max or min. That
  // chunk is then redone element by element. Max and min are taken in the element type (exact), the
  // sums in double.
  template <typename T>
  void add(const T* x, size_t n) {
    double s[kLanes] = {}, q[kLanes] = {};
    T hi[kLanes], lo[kLanes];
    for (size_t j = 0; j < kLanes; ++j) {
      hi[j] = -std::numeric_limits<T>::infinity();
      lo[j] = std::numeric_limits<T>::infinity();
    }
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (size_t j = 0; j < kLanes; ++j) {
        const T e = x[i + j];
        const double v = static_cast<double>(e);
        s[j] += v;
        q[j] += v * v;
        hi[j] = e > hi[j] ? e : hi[j];
        lo[j] = e < lo[j] ? e : lo[j];
      }
    }
    for (size_t j = 0; i < n; ++i, ++j) {
      const T e = x[i];
      const double v = static_cast<double>(e);
      s[j] += v;
      q[j] += v * v;
      hi[j] = e > hi[j] ? e : hi[j];
      lo[j] = e < lo[j] ? e : lo[j];
    }
    double cs = 0, cq = 0, chi = max, clo = min;
    for (size_t j = 0; j < kLanes; ++j) {
      cs += s[j];
      cq += q[j];
      chi = std::max(chi, static_cast<double>(hi[j]));
      clo = std::min(clo, static_cast<double>(lo[j]));
    }
    if (std::isfinite(cs) && std::isfinite(cq) && std::isfinite(chi) && std::isfinite(clo)) {
      sum += cs;
      sumsq += cq;
      max = chi;
      min = clo;
      finite += static_cast<int64_t>(n);
      return;
    }
    add_each(x, n);
  }

  template <typename T>
  void add_each(const T* x, size_t n) {
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
