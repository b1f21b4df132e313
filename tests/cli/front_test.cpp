// The torch-free front: `crosstrain` parses every command's flags, prints help and usage errors,
// and runs the torch-free commands without libtorch; the commands that need libtorch become
// crosstrain-engine (the same process, so output, exit status and signals are the engine's own).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace fs = std::filesystem;
using crosstrain::testing::binary;
using crosstrain::testing::run_command;

namespace {

const std::string kTrace = crosstrain::testing::source_dir() + "/tests/data/traces/torch_cpu_small.json";

size_t line_count(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::vector<std::string> command_names(const std::string& exe) {
  const auto top = run_command(exe + " --help", false);
  std::vector<std::string> out;
  std::istringstream in(top.output.substr(top.output.find("Subcommands:")));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && !line.empty()) {
    std::istringstream w(line);
    std::string name;
    w >> name;
    out.push_back(name);
  }
  return out;
}

// The front alone, copied where no engine sits next to it.
std::string lone_front() {
  static const std::string path = [] {
    const auto dir = crosstrain::testing::scratch_dir("lone_front");
    const auto exe = dir / "crosstrain";
    fs::copy_file(binary(), exe);
    return exe.string();
  }();
  return path;
}

}  // namespace

TEST(Front, UnknownCommandIsNamedAndTheCommandsListed) {
  auto r = run_command(binary() + " frobnicate --json -");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_EQ(r.output.rfind("crosstrain: error: unknown command 'frobnicate'", 0), 0u) << r.output;
  for (const auto& name : command_names(binary())) EXPECT_NE(r.output.find(name), std::string::npos) << name;
  auto none = run_command(binary());
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("a command is required (valid: doctor, models, train"), std::string::npos) << none.output;
}

TEST(Front, VersionIsPrinted) {
  auto r = run_command(binary() + " --version", false);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, std::string(CROSSTRAIN_VERSION) + "\n");
}

TEST(Front, LinksNoLibtorch) {
  auto r = run_command("ldd " + binary(), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("libc.so"), std::string::npos) << r.output;
  for (const char* lib : {"libtorch", "libc10", "libcuda", "libcudart"})
    EXPECT_EQ(r.output.find(lib), std::string::npos) << lib << "\n" << r.output;
}

// Peak RSS through /usr/bin/time, which forks from its own small process: a child forked from
// this test would start its high-water mark at this process's size.
TEST(Front, StartsInLittleMemory) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer's shadow memory counts in the RSS (scripts/sanitize.sh)";
#endif
  for (const std::string& args : std::vector<std::string>{"analyze --help", "train --help", "analyze " + kTrace + " --top 3"}) {
    auto r = run_command("/usr/bin/time -f 'peak_kib=%M' " + binary() + " " + args + " 2>&1 >/dev/null | tail -1");
    ASSERT_EQ(r.output.rfind("peak_kib=", 0), 0u) << r.output;
    const long kib = std::stol(r.output.substr(9));
    EXPECT_LT(kib, 50 * 1024) << args;
    EXPECT_GT(kib, 0) << args;
  }
}

TEST(Front, HelpAndUsageErrorsOfEveryCommandNeedNoEngine) {
  const auto names = command_names(lone_front());
  EXPECT_GE(names.size(), 11u);
  for (const auto& name : names) {
    auto help = run_command(lone_front() + " " + name + " --help");
    EXPECT_EQ(help.exit_code, 0) << name << "\n" << help.output;
    EXPECT_NE(help.output.find("Usage:"), std::string::npos) << name;
    auto bad = run_command(lone_front() + " " + name + " --no-such-flag");
    EXPECT_EQ(bad.exit_code, 2) << name << "\n" << bad.output;
    EXPECT_EQ(line_count(bad.output), 1u) << name << "\n" << bad.output;
  }
  auto bad_value = run_command(lone_front() + " train --precision fp8");
  EXPECT_EQ(bad_value.exit_code, 2);
  EXPECT_NE(bad_value.output.find("--precision"), std::string::npos) << bad_value.output;
}

TEST(Front, TorchFreeCommandsRunWithoutEngine) {
  auto r = run_command(lone_front() + " analyze " + kTrace + " --top 3");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("aten::"), std::string::npos) << r.output;
}

TEST(Front, AMissingEngineIsAClearError) {
  for (const char* command : {"train --steps 1", "models", "doctor", "bench", "op-check", "align --a device=cpu --b device=cpu"}) {
    auto r = run_command(lone_front() + " " + command);
    EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.output;
    EXPECT_EQ(line_count(r.output), 1u) << r.output;
    EXPECT_NE(r.output.find("crosstrain-engine"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(fs::path(lone_front()).parent_path().string()), std::string::npos) << r.output;
  }
}

#ifdef CROSSTRAIN_CLI_WITH_TORCH
// The front hands over with execv: the engine runs in the same process, with the front's argv[0],
// and a signal that ends the engine ends "crosstrain" as the caller sees it.
TEST(Front, EngineRunsInTheSameProcess) {
  const std::vector<std::string> args = {binary(), "train", "--device", "cpu", "--model", "resnet18", "--small-stem",
                                         "--num-classes", "10", "--image-size", "16", "--batch-size", "2",
                                         "--threads", "1", "--steps", "100000", "--no-progress"};
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::freopen("/dev/null", "w", stdout);
    ::freopen("/dev/null", "w", stderr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  const fs::path exe_link = "/proc/" + std::to_string(pid) + "/exe";
  std::string exe;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    exe = fs::read_symlink(exe_link, ec).filename().string();
    if (exe == "crosstrain-engine") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(exe, "crosstrain-engine");
  std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
  std::string argv0;
  std::getline(cmdline, argv0, '\0');
  EXPECT_EQ(argv0, binary());
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  if (WIFSIGNALED(status)) {
    EXPECT_EQ(WTERMSIG(status), SIGTERM);
  }
}
#endif
