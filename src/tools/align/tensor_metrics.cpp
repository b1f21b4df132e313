#include "tools/align/tensor_metrics.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "tools/align/element_decode.h"

namespace crosstrain::align {

namespace {

constexpr size_t kChunk = 2048;
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

  void add_finite(const double* a, const double* b, size_t n) {
    double d0 = 0, na = 0, nb = 0, se = 0, ma = 0, mr = 0, u3 = 0, u5 = 0;
#pragma omp simd reduction(+ : d0, na, nb, se, u3, u5) reduction(max : ma, mr)
    for (size_t i = 0; i < n; ++i) {
      const double x = a[i], y = b[i];
      const double err = std::fabs(x - y);
      const double ref = std::fabs(x);
      d0 += x * y;
      na += x * x;
      nb += y * y;
      se += err * err;
      ma = std::max(ma, err);
      // Where a == 0 a ratio means nothing (it would be err / 0): such elements are left out of
      // the max but never count as "under 1e-3" below unless b == 0 too.
      mr = std::max(mr, ref > 0.0 ? err / ref : 0.0);
      u3 += (err < 1e-3 * ref || err == 0.0) ? 1.0 : 0.0;
      u5 += (err < 5e-3 * ref || err == 0.0) ? 1.0 : 0.0;
    }
    dot += d0;
    norm_a += na;
    norm_b += nb;
    sq_err += se;
    max_abs = std::max(max_abs, ma);
    max_rel = std::max(max_rel, mr);
    under_1e3 += u3;
    under_5e3 += u5;
    finite += static_cast<int64_t>(n);
  }

  void add(const double* a, const double* b, size_t n) {
    int64_t bad = 0;
#pragma omp simd reduction(+ : bad)
    for (size_t i = 0; i < n; ++i) bad += ((a[i] - a[i] != 0.0) || (b[i] - b[i] != 0.0)) ? 1 : 0;
    if (bad == 0) {
      add_finite(a, b, n);
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      const bool fa = std::isfinite(a[i]), fb = std::isfinite(b[i]);
      if (fa && fb) {
        add_finite(a + i, b + i, 1);
      } else if (!fa && !fb && ((std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i])) {
        ++matched;
      } else {
        ++mismatched;
      }
    }
  }
};

Partial run_range(DType ta, const void* a, DType tb, const void* b, size_t begin, size_t end) {
  Partial p;
  std::vector<double> bufa(kChunk), bufb(kChunk);
  for (size_t off = begin; off < end; off += kChunk) {
    const size_t n = std::min(kChunk, end - off);
    const double* pa = bufa.data();
    const double* pb = bufb.data();
    if (ta == DType::Float64)
      pa = static_cast<const double*>(a) + off;
    else
      decode_to_double(ta, a, off, n, bufa.data());
    if (tb == DType::Float64)
      pb = static_cast<const double*>(b) + off;
    else
      decode_to_double(tb, b, off, n, bufb.data());
    p.add(pa, pb, n);
  }
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

}  // namespace crosstrain::align
