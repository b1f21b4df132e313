// `crosstrain compare` on what a comparison is made of: folders of rank dumps compared rank by
// rank, dumps with nothing to compare, and report paths that would write into an input.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/dump/dump_writer.h"
#include "tools/dump/temp_dir.h"

using namespace crosstrain::dump;
using crosstrain::testing::TempDir;
namespace fs = std::filesystem;

namespace {

struct Run {
  int code;
  std::string out;
};

Run run(const std::string& args, bool merged = true) {
  FILE* p = popen(("timeout 20 " + std::string(CROSSTRAIN_BINARY) + " " + args + (merged ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// A data-parallel rank's dump: two forward outputs and the loss; `shift` changes the second.
void write_dump(const std::string& dir, float shift = 0.0f, const std::string& prefix = "") {
  DumpWriter w;
  w.open(dir, DumpMode::Stats);
  std::vector<float> v(256);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 13) - 6.0f;
  w.write_tensor(0, prefix + "conv1", RecordKind::Forward, DType::Float32, {16, 16}, v.data());
  for (auto& x : v) x *= 1.0f + shift;
  w.write_tensor(0, prefix + "fc", RecordKind::Forward, DType::Float32, {16, 16}, v.data());
  w.close();
}

void write_ranks(const std::string& dir, int n, int shifted_rank = -1) {
  for (int r = 0; r < n; ++r) write_dump(dir + "/rank" + std::to_string(r), r == shifted_rank ? 0.01f : 0.0f);
}

}  // namespace

TEST(CompareRanks, FoldersOfRankDumpsCompareRankByRank) {
  TempDir a("ranks"), b("ranks"), c("ranks"), d("ranks"), out("ranks");
  write_ranks(a.str(), 2);
  write_ranks(b.str(), 2);
  write_ranks(c.str(), 2, 1);
  write_ranks(d.str(), 3);
  const auto same = run("compare " + a.str() + " " + b.str());
  EXPECT_EQ(same.code, 0) << same.out;
  EXPECT_NE(same.out.find("== rank 1 =="), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("verdict: runs AGREE (2 ranks compared)"), std::string::npos) << same.out;

  const auto differ = run("compare " + a.str() + " " + c.str() + " --json " + (out / "r.json") + " --csv " + (out / "r.csv"));
  EXPECT_EQ(differ.code, 1) << differ.out;
  EXPECT_NE(differ.out.find("rank 0: AGREE"), std::string::npos) << differ.out;
  EXPECT_NE(differ.out.find("rank 1: DIFFER; first divergence step 0 forward/fc"), std::string::npos) << differ.out;
  EXPECT_NE(differ.out.find("differing: rank 1"), std::string::npos) << differ.out;
  const auto j = nlohmann::json::parse(text_of(out / "r.json"));
  EXPECT_EQ(j["kind"], "compare");
  EXPECT_EQ(j["input"], "rank_dumps");
  EXPECT_EQ(j["agree"], false);
  ASSERT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ranks"][1]["report"]["first_divergence"]["name"], "forward/fc");
  EXPECT_EQ(j["differing_ranks"], nlohmann::json({1}));
  EXPECT_EQ(text_of(out / "r.csv").rfind("rank,step,name,", 0), 0u);

  const auto missing_rank = run("compare " + a.str() + " " + d.str());
  EXPECT_EQ(missing_rank.code, 1) << missing_rank.out;
  EXPECT_NE(missing_rank.out.find("rank 2: only in B"), std::string::npos) << missing_rank.out;

  const auto mixed = run("compare " + a.str() + " " + (b / "rank0"));
  EXPECT_EQ(mixed.code, 2) << mixed.out;
  EXPECT_EQ(lines(mixed.out), 1u) << mixed.out;
  EXPECT_NE(mixed.out.find("is a folder of rank dumps but B is not"), std::string::npos) << mixed.out;
}

TEST(CompareNothing, EmptyDumpsAndNoCommonRecordAreNoAgreement) {
  TempDir a("nothing"), b("nothing"), c("nothing"), d("nothing");
  for (const auto* dir : {&a, &b}) {  // a header and no record: a run that crashed before its first step
    DumpWriter w;
    w.open(dir->str(), DumpMode::Stats);
    w.close();
  }
  const auto empty = run("compare " + a.str() + " " + b.str() + " --json -", false);
  EXPECT_EQ(empty.code, 1) << empty.out;
  const auto j = nlohmann::json::parse(empty.out);
  EXPECT_EQ(j["verdict"], "nothing_compared");
  EXPECT_EQ(j["agree"], false);
  const auto said = run("compare " + a.str() + " " + b.str());
  EXPECT_EQ(said.code, 1);
  EXPECT_EQ(said.out.find("AGREE"), std::string::npos) << said.out;
  EXPECT_NE(said.out.find("verdict: NOTHING COMPARED: no record in common (A holds 0, B 0)"), std::string::npos) << said.out;

  write_dump(c.str(), 0.0f, "encoder.");
  write_dump(d.str(), 0.0f, "decoder.");
  const auto disjoint = run("compare " + c.str() + " " + d.str() + " --allow-missing");
  EXPECT_EQ(disjoint.code, 1) << disjoint.out;
  EXPECT_NE(disjoint.out.find("NOTHING COMPARED: no record in common (A holds 2, B 2)"), std::string::npos) << disjoint.out;
}

TEST(CompareOutputs, AReportNeverWritesIntoAnInput) {
  TempDir a("outputs"), b("outputs"), other("outputs");
  write_dump(a.str());
  write_dump(b.str(), 0.5f);
  const std::string index = a / "index.jsonl", before = text_of(index);
  fs::create_symlink(index, other / "link.json");
  ASSERT_EQ(::link(index.c_str(), (other / "hard.csv").c_str()), 0);
  std::ofstream(other / "loss.txt") << "0 1.0\n1 0.9\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--json " + index, "--json " + index + " would write into the input A"},
      {"--csv " + (b / "tensors.csv"), "would write into the input B"},
      {"--json " + (other / "link.json"), "would write into the input A"},
      {"--csv " + (other / "hard.csv"), "would write into the input A"},
      {"--html " + a.str(), "would write into the input A"},
  };
  for (const auto& [flag, message] : cases) {
    SCOPED_TRACE(flag);
    const auto r = run("compare " + a.str() + " " + b.str() + " " + flag);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_EQ(lines(r.out), 1u) << r.out;
    EXPECT_EQ(r.out.rfind("crosstrain: error: ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
    EXPECT_EQ(text_of(index), before);
    EXPECT_FALSE(fs::exists(b / "tensors.csv"));
  }
  const auto loss = run("compare " + (other / "loss.txt") + " " + (other / "loss.txt") + " --json " + (other / "loss.txt"));
  EXPECT_EQ(loss.code, 2) << loss.out;
  EXPECT_EQ(text_of(other / "loss.txt"), "0 1.0\n1 0.9\n");
  // Beside the inputs is fine.
  EXPECT_EQ(run("compare " + a.str() + " " + b.str() + " --json " + (other / "r.json")).code, 1);
  EXPECT_TRUE(fs::exists(other / "r.json"));
}
