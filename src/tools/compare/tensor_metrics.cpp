#include "tools/compare/tensor_metrics.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "tools/dump/element_decode.h"

namespace crosstrain::compare {

using dump::DType;
using dump::decode_to_double;
using dump::kDecodeChunk;

namespace {

constexpr size_t kChunk = kDecodeChunk;
constexpr size_t kParallelMin = size_t{1} << 20;  // below this, thread start-up is not worth it

struct Partial {
  double dot = 0, norm_a = 0, norm_b = 0, sq_err = 0, max_abs = 0, max_rel = 0;
  double under_1e3 = 0, under_5e3 = 0;
  int64_t finite = 0, matched = 0, mismatched = 0;

  void merge(const Partial& o) {
    dot += o.dot;
    norm_a += o.norm_a;
    norm_b += o.norm_b;
    sq_err += o.sq_err;
    max_abs = std::max(max_abs, o.max_abs);
    max_rel = std::max(max_rel, o.max_rel);
    under_1e3 += o.under_1e3;
    under_5e3 += o.under_5e3;
    finite += o.finite;
    matched += o.matched;
    mismatched += o.mismatched;
  }

  // Accumulates one chunk assuming every element is finite, in one branch-free (vectorisable)
  // pass; returns false, committing nothing, when a NaN/Inf turns up, so the caller takes the
  // element-by-element path for that chunk.
  template <typename TA, typename TB>
  bool add_finite(const TA* a, const TB* b, size_t n) {
    double d0 = 0, na = 0, nb = 0, se = 0, ma = 0, mr = 0, u3 = 0, u5 = 0, nonfinite = 0;
#pragma omp simd reduction(+ : d0, na, nb, se, u3, u5, nonfinite) reduction(max : ma, mr)
    for (size_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
      nonfinite += (x - x) + (y - y);  // 0 for finite values, NaN as soon as one is not
      const double err = std::fabs(x - y);
      const double ref = std::fabs(x);
      d0 += x * y;
      na += x * x;
      nb += y * y;
      se += err * err;
      ma = err > ma ? err : ma;
      // Where a == 0 a ratio means nothing (err / 0): dividing by +inf leaves it out of the max.
      // Such elements never count as "under 1e-3" below unless b == 0 too.
      const double safe_ref = ref > 0.0 ? ref : INFINITY;
      const double rel = err / safe_ref;
      mr = rel > mr ? rel : mr;
      const bool zero = err == 0.0;
      u3 += ((err < 1e-3 * ref) | zero) ? 1.0 : 0.0;
      u5 += ((err < 5e-3 * ref) | zero) ? 1.0 : 0.0;
    }
    if (nonfinite != 0.0) return false;
    dot += d0;
    norm_a += na;
    norm_b += nb;
    sq_err += se;
    max_abs = std::max(max_abs, ma);
    max_rel = std::max(max_rel, mr);
    under_1e3 += u3;
    under_5e3 += u5;
    finite += static_cast<int64_t>(n);
    return true;
  }

  template <typename TA, typename TB>
  void add(const TA* a, const TB* b, size_t n) {
    if (add_finite(a, b, n)) return;
    for (size_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
      const bool fa = std::isfinite(x), fb = std::isfinite(y);
      if (fa && fb) {
        add_finite(&x, &y, 1);
      } else if (!fa && !fb && ((std::isnan(x) && std::isnan(y)) || x == y)) {
        ++matched;
      } else {
        ++mismatched;
      }
    }
  }
};

CROSSTRAIN_SIMD_CLONES void stream_f32(const float* a, const float* b, size_t begin, size_t end, Partial& p) {
  for (size_t off = begin; off < end; off += kChunk) p.add(a + off, b + off, std::min(kChunk, end - off));
}

CROSSTRAIN_SIMD_CLONES void stream_f64(const double* a, const double* b, size_t begin, size_t end, Partial& p) {
  for (size_t off = begin; off < end; off += kChunk) p.add(a + off, b + off, std::min(kChunk, end - off));
}

// Every other pair of dtypes is widened to double a chunk at a time first.
CROSSTRAIN_SIMD_CLONES void stream_decoded(DType ta, const void* a, DType tb, const void* b, size_t begin, size_t end,
                                           Partial& p) {
  double bufa[kChunk], bufb[kChunk];
  for (size_t off = begin; off < end; off += kChunk) {
    const size_t n = std::min(kChunk, end - off);
    decode_to_double(ta, a, off, n, bufa);
    decode_to_double(tb, b, off, n, bufb);
    p.add(static_cast<const double*>(bufa), static_cast<const double*>(bufb), n);
  }
}

Partial run_range(DType ta, const void* a, DType tb, const void* b, size_t begin, size_t end) {
  Partial p;
  // The common cases read the mapped files in place.
  if (ta == DType::Float32 && tb == DType::Float32)
    stream_f32(static_cast<const float*>(a), static_cast<const float*>(b), begin, end, p);
  else if (ta == DType::Float64 && tb == DType::Float64)
    stream_f64(static_cast<const double*>(a), static_cast<const double*>(b), begin, end, p);
  else
    stream_decoded(ta, a, tb, b, begin, end, p);
  return p;
}

}  // namespace

TensorMetrics compare_arrays(DType type_a, const void* a, DType type_b, const void* b, size_t numel, int threads) {
  size_t workers = threads > 0 ? static_cast<size_t>(threads) : std::max(1u, std::thread::hardware_concurrency());
  if (numel < kParallelMin) workers = 1;
  workers = std::min<size_t>(workers, 64);
  Partial total;
  if (workers == 1) {
    total = run_range(type_a, a, type_b, b, 0, numel);
  } else {
    // Contiguous slices, chunk-aligned, so each thread streams its own part of both files.
    const size_t per = (numel / workers + kChunk - 1) / kChunk * kChunk;
    std::vector<Partial> parts(workers);
    std::vector<std::thread> pool;
    for (size_t w = 0; w < workers; ++w) {
      const size_t begin = std::min(numel, w * per), end = std::min(numel, begin + per);
      if (begin >= end) break;
      pool.emplace_back([&, w, begin, end] { parts[w] = run_range(type_a, a, type_b, b, begin, end); });
    }
    for (auto& t : pool) t.join();
    for (const auto& p : parts) total.merge(p);  // fixed order: same result on every run
  }
  TensorMetrics m;
  m.numel = static_cast<int64_t>(numel);
  m.finite_pairs = total.finite;
  m.nonfinite_matched = total.matched;
  m.nonfinite_mismatched = total.mismatched;
  m.max_abs_error = total.max_abs;
  m.max_rel_error = total.max_rel;
  if (total.finite > 0) {
    const double n = static_cast<double>(total.finite);
    m.rmse = std::sqrt(total.sq_err / n);
    m.share_rel_1e3 = total.under_1e3 / n;
    m.share_rel_5e3 = total.under_5e3 / n;
  }
  if (total.norm_a == 0 && total.norm_b == 0)
    m.cosine = 1.0;
  else if (total.norm_a == 0 || total.norm_b == 0)
    m.cosine = 0.0;
  else
    m.cosine = std::clamp(total.dot / (std::sqrt(total.norm_a) * std::sqrt(total.norm_b)), -1.0, 1.0);
  return m;
}

}  // namespace crosstrain::compare
