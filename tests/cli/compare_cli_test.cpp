// `crosstrain compare` through the binary: exit codes, --help, JSON on stdout, report files.
#include <sys/stat.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/dump/dump_writer.h"
#include "tools/dump/temp_dir.h"

using namespace crosstrain::dump;
using crosstrain::testing::TempDir;

namespace {

struct Run {
  int code;
  std::string out;
};

Run capture(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

Run run(const std::string& args) { return capture(std::string(CROSSTRAIN_BINARY) + " " + args + " 2>/dev/null"); }

// Standard output and standard error together, within 20 s (a FIFO must not block).
Run run_merged(const std::string& args) {
  return capture("timeout 20 " + std::string(CROSSTRAIN_BINARY) + " " + args + " 2>&1");
}

size_t line_count(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

std::vector<nlohmann::json> index_of(const std::string& dir) {
  std::ifstream in(dir + "/index.jsonl");
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

void write_index(const std::string& dir, const std::vector<nlohmann::json>& lines) {
  std::ofstream out(dir + "/index.jsonl", std::ios::trunc);
  for (const auto& l : lines) out << l.dump() << "\n";
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
  TempDir a("cli_cmp"), b("cli_cmp"), out("cli_cmp");
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

  const std::string fifo = out / "pipe.json";  // beside the inputs: inside one it would be refused (exit 2)
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

// A comparison that could not be made is no difference. An input that names nothing comparable is
// the caller's mistake (exit 2); one that exists but cannot be read gives no verdict (exit 3). Both
// fail in one line naming the input, on either side, and neither says the runs differ.
TEST(CompareCli, InputsThatCannotBeComparedGiveNoVerdict) {
  namespace fs = std::filesystem;
  TempDir a("cli_in"), in("cli_in");
  write_dump(a.str(), 0.0f);
  fs::create_directories(in / "not_a_dump");
  std::ofstream(in / "not_a_dump/notes.txt") << "hello\n";
  std::ofstream(in / "trace.json") << "{\"traceEvents\": []}\n";
  ASSERT_EQ(::mkfifo((in / "fifo.jsonl").c_str(), 0600), 0);
  fs::create_symlink("loop", in / "loop");
  fs::create_directories(in / "cut_dump");
  std::ofstream(in / "cut_dump/index.jsonl") << "{\"seq\": 0, \"name\": \"forward/conv1\", \"st";
  fs::copy(a.str(), in / "newer_dump", fs::copy_options::recursive);
  auto lines = index_of(in / "newer_dump");
  lines[0]["version"] = 999;
  write_index(in / "newer_dump", lines);
  fs::create_directories(in / "fifo_index");
  ASSERT_EQ(::mkfifo((in / "fifo_index/index.jsonl").c_str(), 0600), 0);
  struct Case {
    std::string path;
    int code;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {a / "no_such_dir", 2, "no such file or directory"},
      {in / "not_a_dump", 2, "is not a crosstrain dump (no index.jsonl)"},
      {in / "trace.json", 2, "is not a loss log"},
      {in / "fifo.jsonl", 3, "is a FIFO, not a regular file"},
      {in / "loop", 3, "Too many levels of symbolic links"},
      {in / "cut_dump", 3, "line 1 is not a JSON header"},
      {in / "newer_dump", 3, "format version 999 is newer than this crosstrain reads"},
      {in / "fifo_index", 3, "is a FIFO, not a regular file"},
  };
  for (const auto& c : cases)
    for (const bool as_b : {true, false}) {
      const std::string args = as_b ? a.str() + " " + c.path : c.path + " " + a.str();
      SCOPED_TRACE("compare " + args);
      const auto r = run_merged("compare " + args);
      EXPECT_EQ(r.code, c.code) << r.out;
      EXPECT_EQ(line_count(r.out), 1u) << r.out;
      EXPECT_EQ(r.out.rfind("crosstrain: error: ", 0), 0u) << r.out;
      EXPECT_NE(r.out.find(c.path), std::string::npos) << r.out;
      EXPECT_NE(r.out.find(c.reason), std::string::npos) << r.out;
      if (c.code == 3) EXPECT_NE(r.out.find(as_b ? "cannot read B: " : "cannot read A: "), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("DIFFER"), std::string::npos) << r.out;
    }
}

// Damage inside a readable dump is a finding about the runs, not a failure to compare: a record
// whose .npy is cut short is named in the report, and what was not compared cannot agree (exit 1).
TEST(CompareCli, ACorruptRecordInAReadableDumpMakesTheRunsDiffer) {
  TempDir a("cli_rec"), b("cli_rec");
  write_dump(a.str(), 0.0f);
  write_dump(b.str(), 0.0f);
  std::string file;
  for (const auto& line : index_of(b.str()))
    if (line.value("name", "") == "forward/fc" || line.value("name", "") == "fc") file = line.value("file", "");
  ASSERT_FALSE(file.empty());
  std::filesystem::resize_file(b / file, 40);
  const auto r = run_merged("compare " + a.str() + " " + b.str());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("runs DIFFER"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fc"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("crosstrain: error:"), std::string::npos) << r.out;
}
