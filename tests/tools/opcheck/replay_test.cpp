// op-check --from-dump on real operator-level dumps: timm's ViT and Hugging Face's GPT-2, each run
// for one step under crosstrain's Python agent (--dump-level op --dump-mode tensors), replayed in
// C++ through the dispatcher against float64 on the CPU.
#include "tools/opcheck/replay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "test_support.h"
#include "tools/opcheck/dumped_ops.h"
#include "tools/opcheck/op_check.h"

using namespace crosstrain::opcheck;
namespace fs = std::filesystem;
namespace ct = crosstrain::testing;

namespace {

// The dumps tests/python/op_replay_dumps.py writes: under CTest once for all cases (the fixture
// OpReplay.WriteDumps, CROSSTRAIN_OP_REPLAY_DUMPS names its folder), else here.
class ReplayDumps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* shared = std::getenv("CROSSTRAIN_OP_REPLAY_DUMPS");
    if (shared && *shared) {
      dir_ = new fs::path(shared);
      return;
    }
    dir_ = new fs::path(ct::scratch_dir("op_replay"));
    const auto r = ct::run_python_script("op_replay_dumps.py", dir_->string());
    if (r.exit_code != 0) std::cerr << r.output;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static fs::path dump(const std::string& name) {
    const fs::path d = *dir_ / name;
    if (!fs::exists(d / "index.jsonl"))
      ADD_FAILURE() << "the agent wrote no dump in " << d << ": " << ct::read_bytes(*dir_ / (name + ".log"));
    return d;
  }

  static ReplayResult replay(const fs::path& d, const std::string& precision = "", const std::string& filter = "") {
    OpCheckOptions o;
    o.from_dump = d.string();
    o.filter = filter;
    if (!precision.empty()) {
      o.precision = precision;
      o.precision_given = true;
    }
    return run_replay(o);
  }

  static fs::path* dir_;
};
fs::path* ReplayDumps::dir_ = nullptr;

std::string describe(const ReplayRow& row) {
  std::ostringstream s;
  s << row.seq << " " << row.op << " " << row.record << " [" << row.reason << "]";
  for (const auto& o : row.outputs) s << " out" << o.index << " " << o.dtype << " rel=" << o.max_rel;
  return s.str();
}

const ReplayRow* find_op(const ReplayResult& r, const std::string& op) {
  for (const auto& row : r.rows)
    if (row.op == op) return &row;
  return nullptr;
}

// Calls the dump holds, counted from its index: records whose names differ only in [i] are one call.
size_t calls_in_index(const fs::path& d) {
  std::set<std::pair<int64_t, std::string>> calls;
  const DumpedOps ops = read_dumped_ops(d.string());
  for (const auto& op : ops.ops)
    for (const auto& out : op.outputs) calls.insert({op.step, split_output_index(out.name).first});
  return calls.size();
}

void expect_whole_dump_passes(const ReplayResult& r, const fs::path& d) {
  EXPECT_EQ(r.calls, static_cast<int64_t>(calls_in_index(d)));
  EXPECT_GT(r.replayed, 50);
  EXPECT_EQ(r.failed, 0);
  for (const auto& row : r.rows) {
    if (row.status == ReplayStatus::Fail) ADD_FAILURE() << "failed: " << describe(row);
    // What is not replayed is a random operator, and nothing else.
    if (row.status == ReplayStatus::NotReplayed) {
      EXPECT_EQ(row.reason.rfind("random:", 0), 0u) << describe(row);
      EXPECT_EQ(row.op, "aten::bernoulli_.float") << describe(row);
    }
    for (const auto& o : row.outputs) {
      // The dump was taken on this CPU in float32: the run's own output meets float32's tolerance too.
      ASSERT_TRUE(o.run_max_rel.has_value()) << describe(row);
      EXPECT_LE(*o.run_max_rel, o.tolerance) << describe(row);
    }
  }
  EXPECT_TRUE(r.all_pass());
}

}  // namespace

TEST_F(ReplayDumps, VitReplaysEveryNonRandomOperatorOnCpuFp32) {
  const fs::path d = dump("vit");
  const ReplayResult r = replay(d);
  expect_whole_dump_passes(r, d);
  // Multi-output operators are one call each: layer norm's output, mean and rstd are three records.
  const ReplayRow* ln = find_op(r, "aten::native_layer_norm");
  ASSERT_NE(ln, nullptr);
  EXPECT_EQ(ln->outputs.size(), 3u);
  EXPECT_LT(r.calls, static_cast<int64_t>(read_dumped_ops(d.string()).records));
  // Operators op-check's own list never heard of are replayed by schema, among them one that its
  // schema calls random (dropout_p) but that ran with dropout_p = 0: the probe finds it deterministic.
  const auto builtin = op_check_names();
  for (const std::string op : {"aten::gelu", "aten::_scaled_dot_product_flash_attention_for_cpu",
                               "aten::_scaled_dot_product_flash_attention_for_cpu_backward"}) {
    EXPECT_EQ(std::count(builtin.begin(), builtin.end(), op.substr(6)), 0);
    const ReplayRow* row = find_op(r, op);
    ASSERT_NE(row, nullptr) << op;
    EXPECT_EQ(row->status, ReplayStatus::Pass) << describe(*row);
  }
  ASSERT_NE(find_op(r, "aten::bernoulli_.float"), nullptr);
  EXPECT_EQ(find_op(r, "aten::bernoulli_.float")->status, ReplayStatus::NotReplayed);
}

TEST_F(ReplayDumps, Gpt2ReplaysEveryNonRandomOperatorOnCpuFp32) {
  const fs::path d = dump("gpt2");
  const ReplayResult r = replay(d);
  expect_whole_dump_passes(r, d);
  int64_t dropout = 0;
  for (const auto& row : r.rows) dropout += row.op == "aten::bernoulli_.float";
  EXPECT_EQ(r.not_replayed, dropout);
  EXPECT_GT(dropout, 0);
  // Python numbers passed for Tensor arguments (AdamW's `step += 1`) are replayed as the wrapped
  // numbers the binding makes of them.
  const ReplayRow* add = find_op(r, "aten::add_.Tensor");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->status, ReplayStatus::Pass) << describe(*add);
}

// The step counter's record (a 0-d float32 tensor plus a Python number) as its out-of-place form,
// with 1 and with 0.5: as wrapped numbers the result stays float32 as in Python; a plain 0-d
// double tensor would promote it to float64 and the replay would not reproduce the recorded dtype.
TEST_F(ReplayDumps, WrappedNumbersKeepTheRunsTypePromotion) {
  const fs::path src = dump("gpt2");
  std::ifstream in(src / "index.jsonl");
  std::string header, line;
  std::getline(in, header);
  nlohmann::json step;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["op"]["name"] == "aten::add_" && j["shape"].empty() && j["op"]["args"][1]["value"].is_number()) {
      step = j;
      break;
    }
  }
  ASSERT_FALSE(step.is_null());
  const fs::path d = ct::scratch_dir("op_replay_wrapped");
  fs::copy(src / "tensors", d / "tensors", fs::copy_options::recursive);
  std::ofstream out(d / "index.jsonl");
  out << header << "\n";
  for (const auto& other : {nlohmann::json(1), nlohmann::json(0.5)}) {
    step["op"]["name"] = "aten::add";
    step["op"]["args"][1]["value"] = other;
    step["seq"] = step["seq"].get<int>() + 1;
    step["name"] = "op_optimizer/aten.add#" + std::to_string(step["seq"].get<int>());
    step.erase("file");  // the run's output was 1 + step, not what this call computes
    out << step.dump() << "\n";
  }
  out.close();
  const ReplayResult r = replay(d);
  ASSERT_EQ(r.rows.size(), 2u);
  for (const auto& row : r.rows) {
    EXPECT_EQ(row.status, ReplayStatus::Pass) << describe(row);
    ASSERT_EQ(row.outputs.size(), 1u);
    EXPECT_EQ(row.outputs[0].dtype, "float32");
  }
}

TEST_F(ReplayDumps, Bf16ReplayHasLargerButBoundedErrors) {
  const fs::path d = dump("vit");
  const ReplayResult fp32 = replay(d);
  const ReplayResult bf16 = replay(d, "bf16");
  ASSERT_EQ(bf16.rows.size(), fp32.rows.size());
  double worst32 = 0, worst16 = 0, sum32 = 0, sum16 = 0;
  int64_t compared = 0, in_bf16 = 0;
  for (size_t i = 0; i < bf16.rows.size(); ++i) {
    const auto& a = fp32.rows[i];
    const auto& b = bf16.rows[i];
    if (b.status == ReplayStatus::NotReplayed) continue;
    EXPECT_EQ(b.reason, "") << describe(b);  // nothing throws in bfloat16
    for (size_t k = 0; k < b.outputs.size() && k < a.outputs.size(); ++k) {
      if (a.outputs[k].dtype != "float32") continue;
      ++compared;
      in_bf16 += b.outputs[k].dtype == "bfloat16";
      // Tolerance follows the least precise input: a float32 result (attention's logsumexp)
      // computed from bfloat16 inputs is held to bfloat16's.
      EXPECT_EQ(b.outputs[k].tolerance, 1e-2) << describe(b);
      worst32 = std::max(worst32, a.outputs[k].max_rel);
      worst16 = std::max(worst16, b.outputs[k].max_rel);
      sum32 += a.outputs[k].max_rel;
      sum16 += b.outputs[k].max_rel;
    }
  }
  EXPECT_GT(compared, 300);
  EXPECT_GT(in_bf16, compared * 95 / 100);
  // Larger: bfloat16 keeps 8 bits where float32 keeps 24.
  EXPECT_GT(sum16, 100 * sum32);
  EXPECT_GT(worst16, 100 * worst32);
  // Bounded: within 5x bfloat16's tolerance everywhere, within it for all but a few calls. (The CPU's
  // bfloat16 layer-norm backward sums the weight and bias gradients less exactly than bfloat16 allows.)
  EXPECT_LE(worst16, 5e-2);
  EXPECT_LE(bf16.failed * 100, bf16.replayed);
  // Outputs a call gave in float32 reach the next call in float32: the attention backward takes
  // the forward's float32 logsumexp and runs.
  const ReplayRow* sdpa_backward = find_op(bf16, "aten::_scaled_dot_product_flash_attention_for_cpu_backward");
  ASSERT_NE(sdpa_backward, nullptr);
  EXPECT_EQ(sdpa_backward->status, ReplayStatus::Pass) << describe(*sdpa_backward);
}

TEST_F(ReplayDumps, StatsModeDumpSaysWhyNothingIsReplayed) {
  const fs::path d = dump("stats");
  const ReplayResult r = replay(d);
  EXPECT_GT(r.calls, 5);
  EXPECT_EQ(r.replayed, 0);
  EXPECT_EQ(r.not_replayed, r.calls);
  for (const auto& row : r.rows) EXPECT_EQ(row.reason, "no inputs recorded: dump with --dump-mode tensors");
  EXPECT_FALSE(r.all_pass());  // nothing checked is not a pass
  EXPECT_NE(render_replay_console(r, 20).find("dump with --dump-mode tensors"), std::string::npos);
}

TEST_F(ReplayDumps, FilterSelectsByOperatorOrRecordName) {
  const fs::path d = dump("vit");
  const ReplayResult gelu = replay(d, "", "gelu");
  ASSERT_GT(gelu.calls, 0);
  for (const auto& row : gelu.rows) EXPECT_NE(row.op.find("gelu"), std::string::npos) << row.op;
  const ReplayResult block = replay(d, "", "blocks.1.attn");
  ASSERT_GT(block.calls, 0);
  for (const auto& row : block.rows) EXPECT_NE(row.record.find("blocks.1.attn"), std::string::npos) << row.record;
  EXPECT_THROW(replay(d, "", "aten::no_such_op"), std::invalid_argument);
}

// A hand-made index built from a real dump's gelu and cat records, with their args damaged in every
// way a file can be: each damaged call is listed with its reason, the intact one still passes.
TEST_F(ReplayDumps, DamagedArgsAreListedReasonsNotCrashes) {
  const fs::path src = dump("vit");
  std::ifstream in(src / "index.jsonl");
  std::string header, line;
  std::getline(in, header);
  nlohmann::json gelu, cat;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["op"]["name"] == "aten::gelu" && gelu.is_null()) gelu = j;
    if (j["op"]["name"] == "aten::cat" && cat.is_null()) cat = j;
  }
  ASSERT_FALSE(gelu.is_null());
  ASSERT_FALSE(cat.is_null());
  ASSERT_EQ(cat["op"]["args"][0]["name"], "tensors");
  cat["op"]["args"][0]["value"][1] = {{"unsupported", "complex64"}};  // one element of a Tensor[]
  cat["seq"] = 100;
  const fs::path d = ct::scratch_dir("op_replay_damaged");
  fs::create_directories(d / "tensors");
  fs::copy(src / "tensors", d / "tensors", fs::copy_options::recursive);
  const nlohmann::json self = gelu["op"]["args"][0];
  auto with_args = [&](int seq, const nlohmann::json& args) {
    nlohmann::json r = gelu;
    r["seq"] = seq;
    r["name"] = "op_forward/case" + std::to_string(seq) + "/aten.gelu";
    r["op"]["args"] = args;
    return r.dump();
  };
  nlohmann::json missing_file = self, wrong_shape = self, escape = self, bad_dtype = self;
  missing_file["value"]["tensor"] = "tensors/step0/no-such-file.npy";
  wrong_shape["value"]["shape"] = {1, 2, 3};
  escape["value"]["tensor"] = "../../../etc/passwd";
  bad_dtype["value"]["dtype"] = "float128";
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {gelu["op"]["args"], ""},  // intact
      {nlohmann::json(5), "'args' is not a list"},
      {nlohmann::json::array({{{"value", 1}}}), "is not {\"name\""},
      {nlohmann::json::array({self, {{"name", "alpha"}, {"value", 1}}}), "'alpha' is not in the schema"},
      {nlohmann::json::array({missing_file}), "no-such-file.npy"},
      {nlohmann::json::array({wrong_shape}), "the record says [1, 2, 3]"},
      {nlohmann::json::array({escape}), "etc/passwd"},
      {nlohmann::json::array({bad_dtype}), "no known dtype"},
      {nlohmann::json::array({{{"name", "self"}, {"value", {{"unsupported", "complex64"}}}}}), "not recorded (complex64)"},
      {nlohmann::json::array({self, {{"name", "approximate"}, {"value", 3}}}), "expected a string"},
      {nlohmann::json::array(), "'self' is not recorded and has no default"},
  };
  {
    std::ofstream out(d / "index.jsonl");
    out << header << "\n";
    for (size_t i = 0; i < cases.size(); ++i) out << with_args(static_cast<int>(i), cases[i].first) << "\n";
    out << cat.dump() << "\n";
    out << "{\"seq\": 99, \"broken json\n";
  }
  const ReplayResult r = replay(d);
  ASSERT_EQ(r.rows.size(), cases.size() + 1);
  EXPECT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.rows.back().op, "aten::cat");
  EXPECT_EQ(r.rows.back().reason, "argument 'tensors': not recorded (complex64)");
  EXPECT_EQ(r.rows[0].status, ReplayStatus::Pass) << describe(r.rows[0]);
  for (size_t i = 1; i < cases.size(); ++i) {
    EXPECT_EQ(r.rows[i].status, ReplayStatus::NotReplayed) << i << ": " << describe(r.rows[i]);
    EXPECT_NE(r.rows[i].reason.find(cases[i].second), std::string::npos) << i << ": " << r.rows[i].reason;
  }
  EXPECT_TRUE(r.all_pass());
}

// A bias gradient that is zero in exact arithmetic (a Linear before batch norm: 3e-10 in float32) is
// judged at the scale of what it summed, and passes; so does the rest of the step.
TEST_F(ReplayDumps, NearZeroReductionsPassAtTheirInputsScale) {
  const fs::path d = dump("near_zero");
  const ReplayResult r = replay(d);
  EXPECT_EQ(r.failed, 0);
  for (const auto& row : r.rows)
    if (row.status == ReplayStatus::Fail) ADD_FAILURE() << "failed: " << describe(row);
  EXPECT_TRUE(r.all_pass());
  const ReplayRow* bias = nullptr;
  for (const auto& row : r.rows)
    if (row.record == "op_backward/0/aten.sum") bias = &row;
  ASSERT_NE(bias, nullptr);
  ASSERT_EQ(bias->outputs.size(), 1u);
  EXPECT_EQ(bias->status, ReplayStatus::Pass) << describe(*bias);
  EXPECT_GT(bias->outputs[0].scale, 1e3 * 3.2e-10) << describe(*bias);  // the inputs' magnitude, not the output's
}

// A hostile dump names operators that touch files: they are listed, never run (no file is created or
// grown, whatever the record says).
TEST_F(ReplayDumps, OperatorsThatTouchFilesAreListedNotRun) {
  const fs::path src = dump("vit");
  std::ifstream in(src / "index.jsonl");
  std::string header, line;
  std::getline(in, header);
  nlohmann::json gelu;
  while (std::getline(in, line) && gelu.is_null()) {
    auto j = nlohmann::json::parse(line);
    if (j["op"]["name"] == "aten::gelu") gelu = j;
  }
  ASSERT_FALSE(gelu.is_null());
  const fs::path d = ct::scratch_dir("op_replay_files");
  const fs::path victim = ct::scratch_dir("op_replay_victim") / "grown.bin";
  std::ofstream(victim) << "abc";
  const fs::path created = victim.parent_path() / "created.bin";
  auto from_file = [&](int seq, const fs::path& target) {
    nlohmann::json r = gelu;
    r["seq"] = seq;
    r["name"] = "op_forward/x/aten.from_file#" + std::to_string(seq);
    r["op"]["name"] = "aten::from_file";
    r["op"]["overload"] = "default";
    r["op"]["args"] = nlohmann::json::array({{{"name", "filename"}, {"value", target.string()}},
                                            {{"name", "shared"}, {"value", true}},
                                            {{"name", "size"}, {"value", 4096}}});
    return r.dump();
  };
  {
    std::ofstream out(d / "index.jsonl");
    out << header << "\n" << from_file(0, victim) << "\n" << from_file(1, created) << "\n";
  }
  const ReplayResult r = replay(d);
  ASSERT_EQ(r.rows.size(), 2u);
  for (const auto& row : r.rows) {
    EXPECT_EQ(row.status, ReplayStatus::NotReplayed) << describe(row);
    EXPECT_NE(row.reason.find("touches files/process state"), std::string::npos) << row.reason;
  }
  EXPECT_EQ(fs::file_size(victim), 3u);
  EXPECT_FALSE(fs::exists(created));
}

TEST(DumpedOps, OutputIndexSplitsOnlyATrailingNumber) {
  EXPECT_EQ(split_output_index("op_forward/ln/aten.native_layer_norm[2]"),
            std::make_pair(std::string("op_forward/ln/aten.native_layer_norm"), std::optional<int>(2)));
  EXPECT_EQ(split_output_index("op_forward/m[x]/aten.mm").second, std::nullopt);
  EXPECT_EQ(split_output_index("op_forward/aten.mm#1").second, std::nullopt);
  EXPECT_EQ(split_output_index("a[]").second, std::nullopt);
}
