// `crosstrain migrate` through the binary: exit codes, one-line errors, files it writes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class MigrateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("crosstrain_migrate_cli_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir / "src");
    std::ofstream(dir / "src" / "train.py") << "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n";
    std::ofstream(dir / "clean.py") << "import torch\nmodel = torch.nn.Linear(2, 2)\n";
  }
  void TearDown() override { fs::remove_all(dir); }

  CliResult run(const std::string& args) {
    std::string cmd = "cd '" + dir.string() + "' && '" CROSSTRAIN_BINARY "' " + args + " 2>'" +
                      (dir / "stderr.txt").string() + "'";
    FILE* pipe = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
    int status = ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, slurp(dir / "stderr.txt")};
  }
  fs::path dir;
};

TEST_F(MigrateCli, HelpListsTheFlags) {
  CliResult r = run("migrate --help");
  EXPECT_EQ(r.code, 0);
  for (const char* flag : {"--to", "--out", "--in-place", "--backup", "--report", "--check", "--diff", "--json"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
}

TEST_F(MigrateCli, CallerMistakesExitTwoWithOneLine) {
  for (const char* args : {"migrate src --bogus", "migrate src --to tpu", "migrate", "migrate nope.py --check",
                           "migrate src --check --in-place", "migrate src --in-place"}) {
    CliResult r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("crosstrain: error: ", 0), 0u) << r.err;
  }
  EXPECT_NE(run("migrate src --to tpu").err.find("device-agnostic, npu, cpu"), std::string::npos);
  EXPECT_EQ(slurp(dir / "src" / "train.py"), "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n");
}

// A file is checked at a limit equal to its size, skipped (and failing --check) one byte below it.
TEST_F(MigrateCli, MaxFileSizeSkipsLargerFilesAndFailsCheck) {
  const auto size = fs::file_size(dir / "clean.py");
  CliResult at = run("migrate clean.py --check --max-file-size " + std::to_string(size));
  EXPECT_EQ(at.code, 0) << at.out << at.err;
  CliResult over = run("migrate clean.py --check --max-file-size " + std::to_string(size - 1));
  EXPECT_EQ(over.code, 1) << over.out << over.err;
  EXPECT_NE(over.out.find("--max-file-size"), std::string::npos) << over.out;
  EXPECT_EQ(run("migrate clean.py --check --max-file-size 0").code, 2);
}

// --out inside the input tree is a caller mistake: nothing is written.
TEST_F(MigrateCli, OutInsideTheInputIsRefused) {
  CliResult r = run("migrate src --out src/migrated");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("inside the input"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "src" / "migrated"));
}

// A report that names a file the migration reads (a script given by name or found in a folder,
// also through a symbolic link) or one it writes (the migrated copy) is refused with one line
// before anything is written; the files stay as they were.
TEST_F(MigrateCli, AReportNeverOverwritesAnInputOrACopy) {
  const std::string source = slurp(dir / "src" / "train.py");
  fs::create_symlink(dir / "src" / "train.py", dir / "link.py");
  for (const std::string& args : {"migrate src/train.py --json src/train.py", "migrate src --json src/train.py",
                                  "migrate src --check --json link.py", "migrate src --out out --json out/train.py"}) {
    CliResult r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("one of the files read"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(slurp(dir / "src" / "train.py"), source) << args;
  }
  EXPECT_EQ(slurp(dir / "out" / "train.py").find("\"cuda\""), std::string::npos);  // the copy, not a report
  EXPECT_EQ(run("migrate src --out out2 --json report.json").code, 0);
}

TEST_F(MigrateCli, CheckIsACiGate) {
  CliResult dirty = run("migrate src --check");
  EXPECT_EQ(dirty.code, 1) << dirty.err;
  EXPECT_NE(dirty.out.find("check failed"), std::string::npos) << dirty.out;
  CliResult clean = run("migrate clean.py --check");
  EXPECT_EQ(clean.code, 0) << clean.err;
  EXPECT_FALSE(fs::exists(dir / "crosstrain-migrated"));
}

TEST_F(MigrateCli, DefaultWritesAMigratedCopy) {
  CliResult r = run("migrate src --to npu");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(dir / "crosstrain-migrated" / "train.py"),
            "import torch\nmodel = torch.nn.Linear(2, 2).to(\"npu\")\n");  // a module, not a program: no torch_npu
}

TEST_F(MigrateCli, ReportJsonAndDiff) {
  CliResult r = run("migrate src --out out --report rep --json - ");
  ASSERT_EQ(r.code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["target"], "device-agnostic");
  EXPECT_EQ(doc["totals"]["references_converted"], 1);
  EXPECT_TRUE(fs::exists(dir / "rep" / "change_list.csv"));
  EXPECT_TRUE(fs::exists(dir / "rep" / "unsupported.csv"));
  EXPECT_TRUE(fs::exists(dir / "rep" / "summary.json"));
  EXPECT_NE(r.err.find("references converted"), std::string::npos) << r.err;

  CliResult d = run("migrate src --check --diff");
  EXPECT_EQ(d.code, 1);
  EXPECT_NE(d.out.find("\n-model = torch.nn.Linear(2, 2).cuda()\n"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("\n+model = torch.nn.Linear(2, 2).to(_accel_device)\n"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.rfind("--- a/", 0), 0u) << d.out;
}

TEST_F(MigrateCli, InPlaceWithBackup) {
  CliResult r = run("migrate src --in-place --backup --to cpu");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(dir / "src" / "train.py"), "import torch\nmodel = torch.nn.Linear(2, 2).to(\"cpu\")\n");
  EXPECT_TRUE(fs::exists(dir / "src" / "train.py.orig"));
  EXPECT_EQ(run("migrate src --check --to cpu").code, 0);
}

TEST_F(MigrateCli, ListRules) {
  CliResult r = run("migrate --list-rules --to npu");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("torch.cuda.is_available"), std::string::npos);
  EXPECT_NE(r.out.find("torch.npu.is_available"), std::string::npos);
}

}  // namespace
