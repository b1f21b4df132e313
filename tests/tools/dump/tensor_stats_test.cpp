#include "tools/dump/tensor_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tools/dump/element_decode.h"

using namespace crosstrain::dump;

TEST(ElementDecode, HalfAndBfloat16KnownValues) {
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_TRUE(std::isinf(half_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bfloat16_to_float(0xc040), -3.0f);
  // Round to nearest even on the way in.
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);   // tie -> even (down)
  EXPECT_EQ(float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(float_to_half(70000.0f), 0x7c00);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
  for (uint32_t h = 0; h < 0x7c00; h += 7)  // every 7th finite half survives a round trip
    EXPECT_EQ(float_to_half(half_to_float(static_cast<uint16_t>(h))), h);
}

TEST(TensorStats, FloatWithNanAndInfCountsThemApart) {
  std::vector<float> v = {1.0f, -2.0f, std::nanf(""), 4.0f, std::numeric_limits<float>::infinity()};
  auto s = compute_stats(DType::Float32, v.data(), v.size());
  EXPECT_EQ(s.numel, 5);
  EXPECT_EQ(s.nan_count, 1);
  EXPECT_EQ(s.inf_count, 1);
  EXPECT_DOUBLE_EQ(*s.max, 4.0);
  EXPECT_DOUBLE_EQ(*s.min, -2.0);
  EXPECT_DOUBLE_EQ(*s.mean, 1.0);
  EXPECT_DOUBLE_EQ(*s.norm, std::sqrt(21.0));
}

TEST(TensorStats, AllNonFiniteOrEmptyHasNoValues) {
  std::vector<float> v = {std::nanf(""), -std::numeric_limits<float>::infinity()};
  auto s = compute_stats(DType::Float32, v.data(), v.size());
  EXPECT_FALSE(s.max.has_value());
  EXPECT_FALSE(s.norm.has_value());
  auto e = compute_stats(DType::Float32, nullptr, 0);
  EXPECT_EQ(e.numel, 0);
  EXPECT_FALSE(e.mean.has_value());
}

TEST(TensorStats, EveryDtype) {
  std::vector<double> d = {0.5, -1.5, 2.0};
  auto sd = compute_stats(DType::Float64, d.data(), 3);
  EXPECT_DOUBLE_EQ(*sd.mean, 1.0 / 3.0);
  std::vector<int64_t> i64 = {-3, 5, 10};
  EXPECT_DOUBLE_EQ(*compute_stats(DType::Int64, i64.data(), 3).max, 10.0);
  std::vector<int32_t> i32 = {-3, 5, 10};
  EXPECT_DOUBLE_EQ(*compute_stats(DType::Int32, i32.data(), 3).min, -3.0);
  std::vector<uint8_t> u8 = {0, 255, 1};
  EXPECT_DOUBLE_EQ(*compute_stats(DType::UInt8, u8.data(), 3).max, 255.0);
  std::vector<uint8_t> b = {1, 0, 1, 1};
  EXPECT_DOUBLE_EQ(*compute_stats(DType::Bool, b.data(), 4).mean, 0.75);
  std::vector<uint16_t> h = {float_to_half(1.5f), float_to_half(-0.25f), 0x7e00};
  auto sh = compute_stats(DType::Float16, h.data(), 3);
  EXPECT_DOUBLE_EQ(*sh.max, 1.5);
  EXPECT_EQ(sh.nan_count, 1);
  std::vector<uint16_t> bf = {float_to_bfloat16(3.0f), float_to_bfloat16(-1.0f)};
  auto sb = compute_stats(DType::BFloat16, bf.data(), 2);
  EXPECT_DOUBLE_EQ(*sb.norm, std::sqrt(10.0));
}

TEST(TensorStats, LargeTensorMatchesLongDoubleReference) {
  // Spans many chunks, with one NaN late in the data to exercise the slow path mid-stream.
  const size_t n = 1'000'003;
  std::vector<float> v(n);
  long double sum = 0, sq = 0;
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(static_cast<int>((i * 7919) % 2001) - 1000) / 37.0f;
    if (i == 777'777) v[i] = std::nanf("");
    else {
      sum += v[i];
      sq += static_cast<long double>(v[i]) * v[i];
    }
  }
  auto s = compute_stats(DType::Float32, v.data(), n);
  EXPECT_EQ(s.nan_count, 1);
  EXPECT_NEAR(*s.mean, static_cast<double>(sum / (n - 1)), 1e-12);
  EXPECT_NEAR(*s.norm, std::sqrt(static_cast<double>(sq)), 1e-9 * std::sqrt(static_cast<double>(sq)));
  EXPECT_FLOAT_EQ(static_cast<float>(*s.max), 1000.0f / 37.0f);
}

// The fast path sums sixteen lanes and commits a chunk only when nothing non-finite showed; a NaN or
// an Inf anywhere (any lane, the tail after the last full row of lanes, either side of a chunk's
// end) must send that chunk to the element-by-element path and be counted, with the statistics of
// the finite elements exact.
TEST(TensorStats, ANonFiniteElementInAnyLaneOrTailIsCountedAndLeftOut) {
  const float inf = std::numeric_limits<float>::infinity();
  for (size_t n : {1u, 15u, 16u, 17u, 33u, 2047u, 2048u, 2049u, 4100u}) {
    std::vector<size_t> places = {0, n - 1, n / 2, n / 3};
    if (n > 16) places.push_back(16);
    if (n > 2048) places.push_back(2048);
    for (size_t p : places) {
      for (float bad : {std::nanf(""), inf, -inf}) {
        std::vector<float> v(n);
        long double sum = 0, sq = 0;
        float hi = -inf, lo = inf;
        for (size_t i = 0; i < n; ++i) {
          v[i] = static_cast<float>(static_cast<int>((i * 37) % 101) - 50) * 0.125f;
          if (i == p) {
            v[i] = bad;
            continue;
          }
          sum += v[i];
          sq += static_cast<long double>(v[i]) * v[i];
          hi = std::max(hi, v[i]);
          lo = std::min(lo, v[i]);
        }
        const auto s = compute_stats(DType::Float32, v.data(), n);
        SCOPED_TRACE("n=" + std::to_string(n) + " at " + std::to_string(p) + " value " + std::to_string(bad));
        EXPECT_EQ(s.nan_count, std::isnan(bad) ? 1 : 0);
        EXPECT_EQ(s.inf_count, std::isinf(bad) ? 1 : 0);
        if (n == 1) {
          EXPECT_FALSE(s.max.has_value());
          continue;
        }
        EXPECT_EQ(*s.max, hi);
        EXPECT_EQ(*s.min, lo);
        EXPECT_NEAR(*s.mean, static_cast<double>(sum / (n - 1)), 1e-12);
        EXPECT_NEAR(*s.norm, std::sqrt(static_cast<double>(sq)), 1e-12 * (1 + std::sqrt(static_cast<double>(sq))));
      }
    }
  }
}

// Max and min are the elements themselves, of whichever lane holds them, in float32 and float64.
TEST(TensorStats, MaxAndMinAreExactInEveryLane) {
  for (size_t at = 0; at < 40; ++at) {
    std::vector<float> f(40, 1.0f);
    std::vector<double> d(40, 1.0);
    f[at] = 1.0f + std::ldexp(1.0f, -23);  // one ulp above the rest
    d[at] = 1.0 + std::ldexp(1.0, -52);
    f[(at + 7) % 40] = -std::ldexp(1.0f, -140);  // a float32 subnormal
    d[(at + 7) % 40] = -std::numeric_limits<double>::denorm_min();
    EXPECT_EQ(*compute_stats(DType::Float32, f.data(), f.size()).max, static_cast<double>(f[at]));
    EXPECT_EQ(*compute_stats(DType::Float32, f.data(), f.size()).min, static_cast<double>(f[(at + 7) % 40]));
    EXPECT_EQ(*compute_stats(DType::Float64, d.data(), d.size()).max, d[at]);
    EXPECT_EQ(*compute_stats(DType::Float64, d.data(), d.size()).min, d[(at + 7) % 40]);
  }
}

// The summation order is part of the format's promise (the same data gives the same bits on every
// machine): element i of a chunk of 2048 goes to lane i % 16, each lane sums in double, the lanes
// are added in order, and the chunks one after the other. Written here plainly, it must give the
// bits of every path compute_stats may take (on a CPU with FMA, float32 uses its own loop).
TEST(TensorStats, Float32SumsFollowTheDocumentedLanesToTheBit) {
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
  };
  for (size_t n : {16u, 17u, 255u, 2048u, 2063u, 4096u, 6150u, 70001u}) {
    std::vector<float> v(n);
    for (auto& e : v) e = static_cast<float>((next() - 0.5) * std::ldexp(1.0, static_cast<int>(next() * 40) - 20));
    double sum = 0, sq = 0;
    for (size_t off = 0; off < n; off += 2048) {
      const size_t m = std::min<size_t>(2048, n - off);
      double s[16] = {}, q[16] = {};
      for (size_t i = 0; i < m; ++i) {
        const double x = v[off + i];
        s[i % 16] += x;
        q[i % 16] += x * x;
      }
      double cs = 0, cq = 0;
      for (size_t j = 0; j < 16; ++j) {
        cs += s[j];
        cq += q[j];
      }
      sum += cs;
      sq += cq;
    }
    const auto st = compute_stats(DType::Float32, v.data(), n);
    SCOPED_TRACE("n=" + std::to_string(n));
    EXPECT_EQ(*st.mean, sum / static_cast<double>(n));
    EXPECT_EQ(*st.norm, std::sqrt(sq));
    EXPECT_EQ(*st.max, static_cast<double>(*std::max_element(v.begin(), v.end())));
    EXPECT_EQ(*st.min, static_cast<double>(*std::min_element(v.begin(), v.end())));
  }
}
