// compare's verdicts on dumps the agent of `crosstrain run` writes (python/crosstrain, started
// from tests/python/compare_runs.py): two honest runs of a small GPT with another thread count
// agree, a planted factor of 1.001 in one attention block is an error at its operator, an inserted
// operator is an insertion, and a bfloat16-autocast CNN against float32 errs nowhere.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/compare/compare_report.h"
#include "tools/compare/dump_compare.h"
#include "tools/dump/dump_reader.h"
#include "tools/dump/temp_dir.h"

using namespace crosstrain::dump;
using namespace crosstrain::compare;
using crosstrain::testing::TempDir;

namespace {

std::string run_cmd(const TempDir& dir, const std::string& name, const std::string& args) {
  return "PYTHONPATH=" + std::string(CROSSTRAIN_SOURCE_DIR) + "/python " + CROSSTRAIN_PYTHON + " " +
         CROSSTRAIN_SOURCE_DIR + "/tests/python/compare_runs.py " + (dir / name) + " " + args + " > " + (dir / name) +
         ".log 2>&1";
}

std::string divergence(const CompareResult& r) {
  return r.first_divergence ? r.tensors[*r.first_divergence].name + ": " + r.tensors[*r.first_divergence].reason : "none";
}

// A tensors-mode dump as a stats-mode dump whose operator inputs name their records
// (op.inputs[].from), the provenance the agent's stats dumps carry: each tensor argument saved to
// a record's own file is that record's output.
void as_stats_with_provenance(const std::string& from, const std::string& to) {
  std::ifstream in(from + "/index.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(nlohmann::json::parse(l));
  std::map<std::string, std::string> record_of_file;
  for (size_t i = 1; i < lines.size(); ++i)
    if (lines[i].contains("file")) record_of_file[lines[i]["file"]] = lines[i]["name"];
  lines[0]["mode"] = "stats";
  std::filesystem::create_directories(to);
  std::ofstream out(to + "/index.jsonl");
  out << lines[0].dump() << "\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    auto& r = lines[i];
    if (r.contains("op")) {
      std::vector<std::string> sources;
      for (const auto& arg : r["op"].value("args", nlohmann::json::array()))
        for (const auto& v : arg["value"].is_array() ? arg["value"] : nlohmann::json::array({arg["value"]}))
          if (v.is_object() && v.contains("tensor") && record_of_file.count(v["tensor"]))
            sources.push_back(record_of_file[v["tensor"]]);
      auto& inputs = r["op"]["inputs"];
      for (size_t k = 0; k < inputs.size() && k < sources.size(); ++k) inputs[k]["from"] = sources[k];
      r["op"].erase("args");
    }
    r.erase("file");
    r.erase("stored_dtype");
    out << r.dump() << "\n";
  }
}

}  // namespace

// One test runs the agent six times at once (Python start-up is most of it) and checks each
// expectation in its own section.
TEST(AgentDumps, VerdictsFollowTheNoiseOfEachRecord) {
  TempDir dir("agentcmp");
  const std::string cmd = "(" + run_cmd(dir, "t1", "--model gpt --threads 1") + ") & (" +
                          run_cmd(dir, "t2", "--model gpt --threads 2") + ") & (" +
                          run_cmd(dir, "plant", "--model gpt --threads 1 --plant 1.001") + ") & (" +
                          run_cmd(dir, "ins", "--model gpt --threads 1 --insert-op") + ") & (" +
                          run_cmd(dir, "cnn32", "--model cnn --mode tensors") + ") & (" +
                          run_cmd(dir, "cnn16", "--model cnn --mode tensors --bf16") + ") & wait";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  for (const char* name : {"t1", "t2", "plant", "ins", "cnn32", "cnn16"})
    ASSERT_TRUE(is_dump_dir(dir / name)) << "tests/python/compare_runs.py failed for " << name << ", see " << (dir / name) << ".log";
  {
    SCOPED_TRACE("1 thread against 2: rounding noise agrees");
    const auto r = compare_paths(dir / "t1", dir / "t2", {});
    EXPECT_TRUE(r.regime.same_precision) << r.regime.why;
    EXPECT_GT(r.tensors.size(), 200u);
    EXPECT_EQ(r.counts.error, 0) << divergence(r);
    EXPECT_TRUE(r.agree);
  }
  {
    SCOPED_TRACE("a factor of 1.001 on block 1's attention scores is an error at that operator");
    const auto r = compare_paths(dir / "t1", dir / "plant", {});
    EXPECT_FALSE(r.agree);
    ASSERT_TRUE(r.first_divergence.has_value());
    const auto& t = r.tensors[*r.first_divergence];
    EXPECT_EQ(t.name, "op_forward/blocks.1.attn/aten.mul") << t.reason;
    ASSERT_TRUE(t.a && t.a->op);
    EXPECT_NE(t.a->op->source.find("compare_runs.py:"), std::string::npos) << t.a->op->source;
    EXPECT_NE(t.a->op->code.find("* scale"), std::string::npos) << t.a->op->code;
    EXPECT_NE(t.reason.find("> 6.1e-05"), std::string::npos) << t.reason;
    // Before it, nothing errs: the first error is the change, not something upstream of it.
    for (size_t i = 0; i < *r.first_divergence; ++i) EXPECT_NE(r.tensors[i].verdict, Verdict::Error) << r.tensors[i].name;
  }
  {
    SCOPED_TRACE("an inserted operator is on one side only; the operators after it still pair");
    const auto r = compare_paths(dir / "t1", dir / "ins", {});
    EXPECT_EQ(r.counts.shape_mismatch, 0);
    EXPECT_EQ(r.counts.error, 0) << divergence(r);
    EXPECT_EQ(r.counts.missing_in_b, 0);
    EXPECT_EQ(r.counts.missing_in_a, 1);
    bool renamed = false;
    for (const auto& t : r.tensors) {
      if (t.status == PairStatus::MissingInA) EXPECT_EQ(t.name, "op_forward/blocks.0/aten.add#1");
      if (t.name == "op_forward/blocks.0/aten.add#1" && t.status == PairStatus::Compared) {
        EXPECT_EQ(t.name_b, "op_forward/blocks.0/aten.add#2");
        renamed = true;
      }
    }
    EXPECT_TRUE(renamed);
    CompareOptions lenient;
    lenient.allow_missing = true;
    EXPECT_TRUE(compare_paths(dir / "t1", dir / "ins", lenient).agree);
  }
  {
    SCOPED_TRACE("bfloat16 autocast against float32: warnings, no error");
    const auto r = compare_paths(dir / "cnn32", dir / "cnn16", {});
    EXPECT_FALSE(r.regime.same_precision);
    EXPECT_EQ(r.counts.error, 0) << divergence(r);
    EXPECT_GT(r.counts.warn, 0);
    EXPECT_GT(r.counts.casts_one_side, 0);  // autocast's casts, in B only
    EXPECT_EQ(r.counts.casts_one_side, r.counts.missing_in_a + r.counts.missing_in_b);
    EXPECT_TRUE(r.agree);
    // The convolution biases sit before batch norm: their gradients are zero in exact arithmetic.
    for (const auto& t : r.tensors)
      if (t.name == "param_grad/conv1.bias") EXPECT_TRUE(t.scale_from_inputs) << t.reason;
  }
  {
    SCOPED_TRACE("the same with statistics and op.inputs[].from");
    as_stats_with_provenance(dir / "cnn32", dir / "cnn32_stats");
    as_stats_with_provenance(dir / "cnn16", dir / "cnn16_stats");
    const auto r = compare_paths(dir / "cnn32_stats", dir / "cnn16_stats", {});
    EXPECT_GT(r.records_with_input_scale, 40);
    EXPECT_EQ(r.counts.error, 0) << divergence(r);
    EXPECT_TRUE(r.agree);
  }
}
