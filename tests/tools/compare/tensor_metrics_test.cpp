#include "tools/compare/tensor_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tools/compare/verdict.h"
#include "tools/dump/element_decode.h"

using namespace crosstrain::dump;
using namespace crosstrain::compare;

TEST(TensorMetrics, IdenticalIsExact) {
  std::vector<float> a = {1, -2, 3, 0};
  auto m = compare_arrays(DType::Float32, a.data(), DType::Float32, a.data(), a.size());
  EXPECT_TRUE(m.exact());
  EXPECT_DOUBLE_EQ(m.cosine, 1.0);
  EXPECT_EQ(m.share_rel_1e3, 1.0);
  EXPECT_EQ(tensor_verdict(m, DType::Float32), Verdict::Pass);
}

TEST(TensorMetrics, KnownValuesAgainstHandComputation) {
  std::vector<double> a = {1, 2, 3, 0};
  std::vector<double> b = {1, 2, 3.006, 0.5};
  auto m = compare_arrays(DType::Float64, a.data(), DType::Float64, b.data(), 4);
  const double dot = 1 + 4 + 3 * 3.006, na = 14, nb = 1 + 4 + 3.006 * 3.006 + 0.25;
  EXPECT_NEAR(m.cosine, dot / std::sqrt(na * nb), 1e-15);
  EXPECT_DOUBLE_EQ(m.max_abs_error, 0.5);
  EXPECT_NEAR(m.max_rel_error, 0.002, 1e-12);     // the a == 0 element has no ratio
  EXPECT_NEAR(m.rmse, std::sqrt((0.006 * 0.006 + 0.25) / 4), 1e-15);
  EXPECT_DOUBLE_EQ(m.share_rel_1e3, 0.5);          // 3.006 is 2e-3 off; 0 -> 0.5 has no ratio
  EXPECT_DOUBLE_EQ(m.share_rel_5e3, 0.75);
  EXPECT_FALSE(m.exact());
}

TEST(TensorMetrics, NonFinitePositionsMatchOrMismatch) {
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  std::vector<float> a = {nan, inf, 1, 2, -inf};
  std::vector<float> b = {nan, inf, 1, nan, inf};
  auto m = compare_arrays(DType::Float32, a.data(), DType::Float32, b.data(), 5);
  EXPECT_EQ(m.nonfinite_matched, 2);
  EXPECT_EQ(m.nonfinite_mismatched, 2);
  EXPECT_EQ(m.finite_pairs, 1);
  std::string why;
  EXPECT_EQ(tensor_verdict(m, DType::Float32, &why), Verdict::Error);
  EXPECT_NE(why.find("NaN/Inf on one side only"), std::string::npos);
  std::vector<float> c = {nan, 1, 2};
  auto same = compare_arrays(DType::Float32, c.data(), DType::Float32, c.data(), 3);
  EXPECT_TRUE(same.exact());
  EXPECT_EQ(tensor_verdict(same, DType::Float32), Verdict::Pass);
}

TEST(TensorMetrics, ZeroVectorsAndMixedDtypes) {
  std::vector<float> z = {0, 0, 0};
  std::vector<float> o = {0, 1, 0};
  EXPECT_DOUBLE_EQ(compare_arrays(DType::Float32, z.data(), DType::Float32, z.data(), 3).cosine, 1.0);
  EXPECT_DOUBLE_EQ(compare_arrays(DType::Float32, z.data(), DType::Float32, o.data(), 3).cosine, 0.0);
  std::vector<float> f = {0.1f, 0.2f, 0.3f};
  std::vector<uint16_t> h = {float_to_half(0.1f), float_to_half(0.2f), float_to_half(0.3f)};
  auto m = compare_arrays(DType::Float32, f.data(), DType::Float16, h.data(), 3);
  EXPECT_GT(m.max_abs_error, 0);
  EXPECT_LT(m.max_rel_error, 1e-3);  // half rounding, nothing more
}

TEST(TensorMetrics, ThreadedEqualsSingleThreaded) {
  const size_t n = (size_t{1} << 21) + 12345;
  std::vector<float> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = std::sin(0.001f * static_cast<float>(i));
    b[i] = a[i] + ((i % 1000 == 0) ? 1e-3f : 0.0f);
  }
  b[n - 1] = std::nanf("");
  auto one = compare_arrays(DType::Float32, a.data(), DType::Float32, b.data(), n, 1);
  auto four = compare_arrays(DType::Float32, a.data(), DType::Float32, b.data(), n, 4);
  EXPECT_EQ(one.nonfinite_mismatched, 1);
  EXPECT_EQ(four.nonfinite_mismatched, 1);
  EXPECT_EQ(one.finite_pairs, four.finite_pairs);
  EXPECT_EQ(one.max_abs_error, four.max_abs_error);
  EXPECT_EQ(one.max_rel_error, four.max_rel_error);
  EXPECT_NEAR(one.cosine, four.cosine, 1e-14);
  EXPECT_NEAR(one.rmse, four.rmse, 1e-14);
  EXPECT_EQ(one.share_rel_1e3, four.share_rel_1e3);
}

TEST(Verdict, ThresholdsByPrecision) {
  TensorMetrics m;
  m.finite_pairs = 100;
  m.cosine = 0.995;
  m.max_abs_error = 0.01;
  EXPECT_EQ(tensor_verdict(m, DType::Float32), Verdict::Warn);   // below 0.99999, above the error bars
  m.cosine = 0.98;
  EXPECT_EQ(tensor_verdict(m, DType::Float32), Verdict::Error);  // cos < 0.99 and max abs > 1e-3
  m.max_abs_error = 1e-4;
  EXPECT_EQ(tensor_verdict(m, DType::Float32), Verdict::Warn);   // tiny values: cosine alone decides
  m.cosine = 0.89;
  EXPECT_EQ(tensor_verdict(m, DType::Float32), Verdict::Error);  // cos < 0.9 always errs
  EXPECT_EQ(tensor_verdict(m, DType::BFloat16), Verdict::Warn);  // bf16 rounding compounds
  m.cosine = 0.79;
  EXPECT_EQ(tensor_verdict(m, DType::BFloat16), Verdict::Error);
  m.cosine = 0.999995;
  EXPECT_EQ(tensor_verdict(m, DType::Float32), Verdict::Pass);
  EXPECT_EQ(tensor_verdict(m, DType::Float64), Verdict::Warn);
  TensorMetrics scalar;
  scalar.finite_pairs = 1;
  scalar.max_rel_error = 2e-3;
  EXPECT_EQ(tensor_verdict(scalar, DType::Float32), Verdict::Error);
  EXPECT_EQ(tensor_verdict(scalar, DType::BFloat16), Verdict::Pass);
  TensorMetrics ints;
  ints.finite_pairs = 3;
  ints.max_abs_error = 1;
  EXPECT_EQ(tensor_verdict(ints, DType::Int64), Verdict::Error);
  EXPECT_EQ(lower_precision(DType::Float32, DType::BFloat16), DType::BFloat16);
  EXPECT_EQ(lower_precision(DType::Float64, DType::Float16), DType::Float16);
}

TEST(Verdict, StatsComparison) {
  TensorStats a;
  a.numel = 100;
  a.max = 2.0;
  a.min = -2.0;
  a.mean = 1e-9;  // near zero: scaled by the RMS, not by itself
  a.norm = 10.0;
  TensorStats b = a;
  b.mean = 2e-9;
  double worst = -1;
  EXPECT_EQ(stats_verdict(a, b, DType::Float32, &worst), Verdict::Pass);
  EXPECT_LT(worst, 1e-8);
  b.norm = 10.5;
  EXPECT_EQ(stats_verdict(a, b, DType::Float32, &worst), Verdict::Error);
  EXPECT_NEAR(worst, 0.05, 1e-12);
  EXPECT_EQ(stats_verdict(a, b, DType::BFloat16, &worst), Verdict::Warn);
  b = a;
  b.nan_count = 3;
  EXPECT_EQ(stats_verdict(a, b, DType::Float32), Verdict::Error);
}
