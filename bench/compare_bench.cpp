// Throughput of the dump hot paths on in-memory data: statistics of a 100M-element float32 tensor
// (what DumpWriter does per record) and element-wise comparison of two such tensors, by thread
// count. Prints one line per measurement (best of --repeats). Built on demand:
//   ninja -C build-nt crosstrain_compare_bench && build-nt/crosstrain_compare_bench [numel] [repeats]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tools/compare/tensor_metrics.h"
#include "tools/dump/tensor_stats.h"

using namespace crosstrain::dump;
using namespace crosstrain::compare;

namespace {

template <typename F>
double best_seconds(int repeats, F&& f) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100'000'000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  std::vector<float> a(n), b(n);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;  // LCG: cheap, deterministic data with every sign and scale
    a[i] = static_cast<float>(static_cast<int32_t>(x)) * 1e-9f;
    b[i] = a[i] * (1.0f + 1e-4f * static_cast<float>((x >> 8) % 7));
  }
  const double gb = static_cast<double>(n) * sizeof(float) / 1e9;
  double sink = 0;
  const double ts = best_seconds(repeats, [&] { sink += *compute_stats(DType::Float32, a.data(), n).norm; });
  std::printf("stats    float32 numel=%zu  %.3f s  %.2f GB/s\n", n, ts, gb / ts);
  for (int threads : {1, 2}) {
    const double tc = best_seconds(repeats, [&] {
      sink += compare_arrays(DType::Float32, a.data(), DType::Float32, b.data(), n, threads).cosine;
    });
    std::printf("compare  float32 numel=%zu threads=%d  %.3f s  %.2f GB/s per side, %.2f GB/s both sides\n", n,
                threads, tc, gb / tc, 2 * gb / tc);
  }
  return sink == 42.0;  // keeps the work observable
}
