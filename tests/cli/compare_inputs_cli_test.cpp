// `crosstrain compare` on what a comparison is made of: dumps with nothing to compare, and report
// paths that would write into an input.
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

#include "tools/align/dump_writer.h"
#include "tools/align/temp_dir.h"

using namespace crosstrain::align;
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

}  // namespace

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
