#include "tools/opcheck/op_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

using namespace crosstrain::opcheck;

namespace {

std::string failures(const OpCheckResult& r) {
  std::string out;
  for (const auto& row : r.rows)
    if (!row.pass) out += row.op + " " + row.output + " max_rel=" + std::to_string(row.max_rel) + " " + row.error + "\n";
  return out;
}

}  // namespace

TEST(OpCheck, CpuFp32Passes) {
  OpCheckOptions o;
  auto r = run_op_check(o);
  EXPECT_TRUE(r.all_pass()) << failures(r);
  std::set<std::string> ops;
  for (const auto& row : r.rows) ops.insert(row.op);
  for (const auto& name : op_check_names()) EXPECT_TRUE(ops.count(name)) << name;
  bool grad_weight = false;
  for (const auto& row : r.rows) grad_weight = grad_weight || (row.op == "conv2d" && row.output == "grad_weight");
  EXPECT_TRUE(grad_weight);
}

TEST(OpCheck, CpuBf16Passes) {
  OpCheckOptions o;
  o.precision = "bf16";
  auto r = run_op_check(o);
  EXPECT_TRUE(r.all_pass()) << failures(r);
  for (const auto& row : r.rows) {
    if (row.op == "conv2d") EXPECT_EQ(row.dtype, "BFloat16");
    if (row.op == "sgd_step") EXPECT_EQ(row.dtype, "Float");  // master weights stay float32
    // bf16 is not float64: a check that reports no error at all would be checking nothing.
    if (row.op == "conv2d" && row.output == "forward") EXPECT_GT(row.max_abs, 0);
  }
}

TEST(OpCheck, FilterAndPerf) {
  OpCheckOptions o;
  o.filter = "relu";
  o.perf = true;
  o.perf_iterations = 2;
  auto r = run_op_check(o);
  ASSERT_EQ(r.rows.size(), 2u);  // forward and grad_input
  for (const auto& row : r.rows) {
    EXPECT_EQ(row.op, "relu");
    ASSERT_TRUE(row.ms.has_value());
    EXPECT_GE(*row.ms, 0);
  }
  o.filter = "no_such_op";
  EXPECT_THROW(run_op_check(o), std::invalid_argument);
}

TEST(OpCheck, Tolerances) {
  EXPECT_DOUBLE_EQ(op_check_tolerance(at::kFloat), 1e-5);
  EXPECT_DOUBLE_EQ(op_check_tolerance(at::kBFloat16), 1e-2);
  EXPECT_DOUBLE_EQ(op_check_tolerance(at::kHalf), 1e-3);
}

// GPT-2's causal mask is a where() over -inf: a result whose -inf sits where the reference has it
// agrees there, and the finite rest is measured; an inf or NaN on one side only is an infinite error.
TEST(OpCheck, NonFiniteValuesAgreeOnlyWhereBothSidesHoldThem) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  auto t = [](std::vector<double> v) { return at::tensor(v, at::TensorOptions().dtype(at::kDouble)); };
  const auto ref = t({-inf, 2.0, nan, 4.0});
  const ErrorMetrics same = measure_error(t({-inf, 2.0, nan, 4.5}), ref);
  EXPECT_DOUBLE_EQ(same.max_abs, 0.5);
  EXPECT_DOUBLE_EQ(same.max_rel, 0.5 / 4.0);
  EXPECT_GT(same.cosine, 0.99);
  for (const auto& bad : {t({inf, 2.0, nan, 4.0}), t({-inf, 2.0, 3.0, 4.0}), t({-inf, nan, nan, 4.0})}) {
    const ErrorMetrics m = measure_error(bad, ref);
    EXPECT_TRUE(std::isinf(m.max_abs));
    EXPECT_TRUE(std::isinf(m.max_rel));
  }
  const ErrorMetrics zeros = measure_error(t({0, 0}), t({0, 0}));
  EXPECT_EQ(zeros.max_rel, 0);
  EXPECT_EQ(zeros.cosine, 1);
}
