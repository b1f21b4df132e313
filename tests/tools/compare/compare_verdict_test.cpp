// compare's verdicts against the noise of each record's inputs (noise_model.h, verdict.h): rounding
// noise agrees, a planted 1e-3 in float32 is an error at its operator, a gradient that is zero in
// exact arithmetic is judged against its inputs' scale, and cross-precision comparisons keep the
// table's tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tools/compare/compare_report.h"
#include "tools/compare/dump_compare.h"
#include "tools/dump/op_dump.h"
#include "tools/dump/temp_dir.h"

using namespace crosstrain::dump;
using namespace crosstrain::compare;
using crosstrain::testing::OpDump;
using crosstrain::testing::pattern;
using crosstrain::testing::rounded_differently;
using crosstrain::testing::scaled;
using crosstrain::testing::TempDir;

namespace {

struct RunOptions {
  double plant = 1.0;          // factor on the scores of the attention (the mul) and what follows
  bool other_rounding = false; // every value 2 float32 spacings away, the zero gradient redrawn
  bool provenance = true;      // op.inputs[].from
  bool bf16_forward = false;   // forward operators in bfloat16 (autocast)
  bool declared = true;        // meta.precision in the header
};

// One step of an attention block as the agent records it: scores (bmm), scaled scores (mul), their
// softmax, the module output, a gradient, and a gradient that is zero in exact arithmetic (the sum
// of a softmax gradient over its rows: 16 values of 1e-14 from inputs of 1e-3), which the
// parameter gradient then holds.
void write_attention_run(const std::string& dir, const RunOptions& o) {
  OpDump d(o.declared ? nlohmann::json{{"precision", o.bf16_forward ? "bf16" : "fp32"}} : nlohmann::json::object());
  const auto noisy = [&](std::vector<float> v) { return o.other_rounding ? rounded_differently(std::move(v), 2) : v; };
  const auto from = [&](std::vector<std::string> names) { return o.provenance ? names : std::vector<std::string>{}; };
  const DType fwd = o.bf16_forward ? DType::BFloat16 : DType::Float32;
  const auto scores = pattern(1024, 1.0, 1);
  d.op(0, "op_forward/attn/aten.bmm", noisy(scores), {}, fwd);
  d.op(0, "op_forward/attn/aten.mul", noisy(scaled(scores, 0.25 * o.plant)), from({"op_forward/attn/aten.bmm"}), fwd);
  d.op(0, "op_forward/attn/aten._softmax", noisy(scaled(pattern(1024, 0.03, 2), 1 + (o.plant - 1) * 0.3)),
       from({"op_forward/attn/aten.mul"}), fwd);
  d.record(0, "forward/attn", noisy(scaled(pattern(1024, 0.5, 3), 1 + (o.plant - 1) * 0.05)), fwd);
  d.record(0, "loss", noisy({2.5f + static_cast<float>(o.plant - 1)}));
  d.op(0, "op_backward/attn/aten._softmax_backward_data", noisy(pattern(1024, 1e-3, 4)), {});
  const auto zero_grad = pattern(16, 1e-14, o.other_rounding ? 7 : 5);
  d.op(0, "op_backward/attn/aten.sum", zero_grad, from({"op_backward/attn/aten._softmax_backward_data"}));
  d.record(0, "param_grad/attn.offset", zero_grad);
  d.record(0, "param_grad/attn.weight", noisy(pattern(1024, 2e-3, 6)));
  d.write(dir);
}

const TensorComparison& record(const CompareResult& r, const std::string& name) {
  for (const auto& t : r.tensors)
    if (t.name == name) return t;
  throw std::runtime_error("no record " + name);
}

std::string divergence(const CompareResult& r) {
  return r.first_divergence ? r.tensors[*r.first_divergence].name + ": " + r.tensors[*r.first_divergence].reason : "none";
}

}  // namespace

TEST(NoiseRule, RoundingNoiseOfTheSamePrecisionAgrees) {
  TempDir a("noise"), b("noise");
  write_attention_run(a.str(), {});
  write_attention_run(b.str(), {1.0, true});
  const auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_TRUE(r.regime.same_precision) << r.regime.why;
  EXPECT_EQ(r.counts.error, 0) << divergence(r);
  EXPECT_TRUE(r.agree);
  // The zero gradient differs by ~100% of itself and by nothing of its inputs; the parameter
  // gradient holding the same tensor inherits its inputs' scale.
  for (const char* name : {"op_backward/attn/aten.sum", "param_grad/attn.offset"}) {
    const auto& t = record(r, name);
    EXPECT_EQ(t.verdict, Verdict::Pass) << name << ": " << t.reason;
    EXPECT_TRUE(t.scale_from_inputs) << name;
    EXPECT_GT(*t.stat_rel_error, 0.0) << name;
    EXPECT_LT(*t.stat_rel_error, 1e-9) << name;
  }
  EXPECT_EQ(r.records_with_input_scale, 4);  // mul, softmax, sum, and the gradient holding the sum
}

TEST(NoiseRule, APlantedChangeOfOnePerMilleIsAnErrorAtItsOperator) {
  TempDir a("noise"), b("noise");
  write_attention_run(a.str(), {});
  RunOptions planted{1.001, true};
  write_attention_run(b.str(), planted);
  const auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_FALSE(r.agree);
  ASSERT_TRUE(r.first_divergence.has_value());
  const auto& t = r.tensors[*r.first_divergence];
  EXPECT_EQ(t.name, "op_forward/attn/aten.mul") << t.reason;
  EXPECT_TRUE(t.tolerance.by_noise);
  EXPECT_DOUBLE_EQ(t.tolerance.error, kNoiseErrorEps * 0x1p-23);
  // 1e-3 of a record whose input is 4 times larger: the maximum's change against the input's RMS.
  EXPECT_GT(*t.rel_error, 2e-4);
  EXPECT_LT(*t.rel_error, 5e-4);
  EXPECT_NE(t.reason.find("> 6.1e-05"), std::string::npos) << t.reason;
  ASSERT_TRUE(t.b && t.b->op);
  EXPECT_EQ(t.b->op->source, "model.py:11");
  // The report states the rule it judged by and where the divergence is.
  const std::string text = render_compare_console(r);
  EXPECT_NE(text.find("thresholds: same precision on both sides"), std::string::npos) << text;
  EXPECT_NE(text.find("float32 6.1e-05 / 3.81e-06"), std::string::npos) << text;
  EXPECT_NE(text.find("first divergence: step 0 op_forward/attn/aten.mul"), std::string::npos) << text;
  EXPECT_NE(text.find("at model.py:11: y = f(x)"), std::string::npos) << text;
  const auto j = compare_to_json(r);
  EXPECT_EQ(j["thresholds"]["regime"], "same_precision");
  EXPECT_EQ(j["thresholds"]["by_dtype"]["float32"]["rule"], "noise");
  EXPECT_DOUBLE_EQ(j["first_divergence"]["threshold"].get<double>(), kNoiseErrorEps * 0x1p-23);
  EXPECT_EQ(j["first_divergence"]["origin"]["source"], "model.py:11");
}

TEST(NoiseRule, WithoutProvenanceARecordIsJudgedAgainstItsOwnScale) {
  TempDir a("noise"), b("noise");
  RunOptions plain;
  plain.provenance = false;
  write_attention_run(a.str(), plain);
  plain.other_rounding = true;
  write_attention_run(b.str(), plain);
  const auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_EQ(r.records_with_input_scale, 0);
  const auto& t = record(r, "op_backward/attn/aten.sum");
  EXPECT_FALSE(t.scale_from_inputs);
  EXPECT_EQ(t.verdict, Verdict::Error);  // rounding noise of 1e-14 is 100% of its own RMS
  EXPECT_EQ(divergence(r).rfind("op_backward/attn/aten.sum", 0), 0u) << divergence(r);
}

TEST(NoiseRule, CrossPrecisionKeepsTheTablesTolerance) {
  TempDir a("noise"), b("noise");
  write_attention_run(a.str(), {});
  RunOptions bf16{1.001, true};
  bf16.bf16_forward = true;
  write_attention_run(b.str(), bf16);
  const auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_FALSE(r.regime.same_precision);
  EXPECT_NE(r.regime.why.find("declare different precisions"), std::string::npos) << r.regime.why;
  EXPECT_EQ(r.counts.error, 0) << divergence(r);
  EXPECT_TRUE(r.agree);
  EXPECT_FALSE(record(r, "op_forward/attn/aten.mul").tolerance.by_noise);
  const auto j = compare_to_json(r);
  EXPECT_EQ(j["thresholds"]["regime"], "cross_precision");
  EXPECT_EQ(j["thresholds"]["by_dtype"]["bfloat16"]["rule"], "table");
  EXPECT_DOUBLE_EQ(j["thresholds"]["by_dtype"]["bfloat16"]["error"].get<double>(), 0.1);
}

TEST(NoiseRule, TwoAutocastRunsJudgeTheirFloat32RecordsAtBfloat16) {
  // Both runs undeclared and bf16 forward: one precision, so the noise rule; but the float32
  // gradients come from bf16 activations and carry their rounding (here 1e-3 apart).
  TempDir a("noise"), b("noise");
  RunOptions bf16;
  bf16.bf16_forward = true;
  bf16.declared = false;
  write_attention_run(a.str(), bf16);
  bf16.plant = 1.001;  // 1e-3 on the forward operators, under bf16's limits
  write_attention_run(b.str(), bf16);
  const auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_TRUE(r.regime.same_precision) << r.regime.why;
  const auto& t = record(r, "loss");  // float32, 4e-4 apart
  EXPECT_EQ(t.effective_dtype, DType::BFloat16);
  EXPECT_FALSE(t.tolerance.by_noise);
  EXPECT_EQ(r.counts.error, 0) << divergence(r);
}
