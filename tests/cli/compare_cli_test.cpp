// `crosstrain compare` through the binary: exit codes, --help, JSON on stdout, report files.
#include <sys/stat.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

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

namespace {

struct Run {
  int code;
  std::string out;
};

Run run(const std::string& args) {
  const std::string cmd = std::string(CROSSTRAIN_BINARY) + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

void write_dump(const std::string& dir, float shift) {
  DumpWriter w;
  w.open(dir, DumpMode::Tensors);
  std::vector<float> v(256);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 13) - 6.0f;
  w.write_tensor(0, "conv1", RecordKind::Forward, DType::Float32, {16, 16}, v.data());
  for (size_t i = 0; i < v.size(); i += 2) v[i] += shift * static_cast<float>(i % 5);
  w.write_tensor(0, "fc", RecordKind::Forward, DType::Float32, {16, 16}, v.data());
  w.write_scalar(0, RecordKind::Loss, 1.0);
  w.log_loss(0, 1.0);
  w.close();
}

}  // namespace

TEST(CompareCli, ExitCodesSayWhetherRunsAgree) {
  TempDir a("cli"), b("cli"), c("cli");
  write_dump(a.str(), 0.0f);
  write_dump(b.str(), 0.0f);
  write_dump(c.str(), 10.0f);
  auto same = run("compare " + a.str() + " " + b.str());
  EXPECT_EQ(same.code, 0);
  EXPECT_NE(same.out.find("verdict: runs AGREE"), std::string::npos);
  auto differ = run("compare " + a.str() + " " + c.str());
  EXPECT_EQ(differ.code, 1);
  EXPECT_NE(differ.out.find("first divergence: step 0 forward/fc"), std::string::npos);
}

TEST(CompareCli, JsonOnStdoutAndReportFiles) {
  TempDir a("cli"), c("cli"), out("cli");
  write_dump(a.str(), 0.0f);
  write_dump(c.str(), 10.0f);
  auto r = run("compare " + a.str() + " " + c.str() + " --json - --csv " + (out / "r.csv") + " --html " +
               (out / "r.html"));
  EXPECT_EQ(r.code, 1);
  auto j = nlohmann::json::parse(r.out);  // stdout holds only the JSON document
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["first_divergence"]["name"], "forward/fc");
  EXPECT_TRUE(std::filesystem::file_size(out / "r.csv") > 100);
  std::ifstream html(out / "r.html");
  std::string page((std::istreambuf_iterator<char>(html)), {});
  EXPECT_NE(page.find("cosine-profile"), std::string::npos);
}

TEST(CompareCli, CallerMistakesExitTwo) {
  TempDir a("cli");
  write_dump(a.str(), 0.0f);
  EXPECT_EQ(run("compare --help").code, 0);
  EXPECT_NE(run("compare --help").out.find("--loss-rtol"), std::string::npos);
  EXPECT_EQ(run("compare " + a.str()).code, 2);                                     // B missing
  EXPECT_EQ(run("compare " + a.str() + " " + a.str() + " --bogus").code, 2);        // unknown flag
  EXPECT_EQ(run("compare " + a.str() + " " + (a / "no_such_dir")).code, 2);         // path does not exist
  EXPECT_EQ(run("compare " + a.str() + " " + a.str() + " --precision int8").code, 2);
  EXPECT_EQ(run("compare " + a.str() + " " + a.str() + " --loss-rtol abc").code, 2);
  EXPECT_EQ(run("compare " + a.str() + " " + a.str() + " --json /no/such/dir/r.json").code, 1);  // runtime
}

// Reports that cannot be written fail the command: stdout on /dev/full, a FIFO nobody reads as
// --json, and a --json symlink keeps being a link.
TEST(CompareCli, FailedReportWritesExitOneWithAMessage) {
  TempDir a("cli_cmp"), b("cli_cmp");
  write_dump(a.str(), 0.0f);
  write_dump(b.str(), 0.0f);
  const std::string cmd = std::string(CROSSTRAIN_BINARY) + " compare " + a.str() + " " + b.str();
  const std::string err_file = a / "stderr.txt";
  int status = std::system((cmd + " --json - > /dev/full 2>" + err_file).c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::ifstream err(err_file);
  std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("standard output"), std::string::npos) << text;
  status = std::system((cmd + " > /dev/full 2>/dev/null").c_str());
  EXPECT_EQ(WEXITSTATUS(status), 1) << "console report lost on a full device";

  const std::string fifo = a / "pipe.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(run("compare " + a.str() + " " + b.str() + " --json " + fifo).code, 1);
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
}

TEST(CompareCli, UnwritableOutputFailsBeforeComparing) {
  // The missing input would fail the comparison with exit 2; the output check comes first.
  TempDir a("cli_cmp");
  const std::string err_file = a / "stderr.txt";
  const std::string cmd = std::string(CROSSTRAIN_BINARY) + " compare " + (a / "missing_a") + " " + (a / "missing_b") +
                          " --html " + (a / "no/such/dir/r.html") + " >/dev/null 2>" + err_file;
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::ifstream err(err_file);
  std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("no/such/dir"), std::string::npos) << text;
}
