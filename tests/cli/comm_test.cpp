// comm-bench through the binary: workers started with torchrun's variables on the loopback (Gloo on
// the CPU).
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "test_support.h"

namespace ct = crosstrain::testing;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

using Env = std::map<std::string, std::string>;

// Processes started as a launcher starts workers: each with its own variables, output to files.
class Workers {
 public:
  explicit Workers(fs::path dir) : dir_(std::move(dir)) {}
  ~Workers() {
    for (pid_t p : pids_)
      if (p > 0) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
  }
  // Rank r of n on the loopback at `port`, plus `extra` variables.
  static Env torchrun(int r, int n, int port, const Env& extra = {}) {
    Env e = {{"RANK", std::to_string(r)},        {"LOCAL_RANK", std::to_string(r)}, {"WORLD_SIZE", std::to_string(n)},
             {"LOCAL_WORLD_SIZE", std::to_string(n)}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}};
    for (const auto& [k, v] : extra) e[k] = v;
    return e;
  }
  int start(const Env& env, const std::string& args) {
    const int i = static_cast<int>(pids_.size());
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (const char* v : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                            "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME"})
        ::unsetenv(v);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      const std::string cmd = "exec " + ct::binary() + " " + args + " > " + out(i).string() + " 2> " + err(i).string();
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pids_.push_back(pid);
    return i;
  }
  fs::path out(int i) const { return dir_ / ("out" + std::to_string(i) + ".txt"); }
  fs::path err(int i) const { return dir_ / ("err" + std::to_string(i) + ".txt"); }
  std::string output(int i) const { return read_file(out(i)) + read_file(err(i)); }
  // The exit code of process i, or -1 when it still runs at `deadline`.
  int wait(int i, Clock::time_point deadline) {
    pid_t& p = pids_[static_cast<size_t>(i)];
    while (true) {
      int status = 0;
      if (::waitpid(p, &status, WNOHANG) == p) {
        p = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (Clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  fs::path dir_;
  std::vector<pid_t> pids_;
};

Clock::time_point in_seconds(int s) { return Clock::now() + std::chrono::seconds(s); }

}  // namespace

#ifdef CROSSTRAIN_CLI_WITH_TORCH

TEST(CommBench, TwoRanksReportEveryCheckedSizeAndBusBandwidth) {
  const auto dir = ct::scratch_dir("comm_bench_2");
  const int port = free_port();
  const std::string json = (dir / "bench.json").string();
  {
    Workers w(dir);
    const std::string args = "comm-bench --min-bytes 8 --max-bytes 4K --iters 3 --warmup 1 --memcpy-bytes 8M --json " + json;
    for (int r = 0; r < 2; ++r) w.start(Workers::torchrun(r, 2, port), args);
    for (int r = 0; r < 2; ++r) ASSERT_EQ(w.wait(r, in_seconds(60)), 0) << w.output(r);
    EXPECT_EQ(read_file(w.out(1)), "") << "only rank 0 reports";
    const std::string table = read_file(w.out(0));
    EXPECT_NE(table.find("comm-bench: 2 ranks on 1 host, gloo on cpu, float32"), std::string::npos) << table;
    EXPECT_NE(table.find("memcpy on rank 0 alone (8.00 MiB"), std::string::npos) << table;
    EXPECT_NE(table.find("every result exact"), std::string::npos) << table;
    EXPECT_EQ(table.find("wrong"), std::string::npos) << table;
  }
  std::ifstream in(json);
  const auto doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc.at("kind"), "comm-bench");
  EXPECT_EQ(doc.at("world_size"), 2);
  EXPECT_TRUE(doc.at("ok").get<bool>());
  EXPECT_GT(doc.at("memcpy").at("gbps").get<double>(), 0.1);
  const std::map<std::string, double> factor = {
      {"all-reduce", 1.0}, {"all-gather", 0.5}, {"reduce-scatter", 0.5}, {"broadcast", 1.0}};
  std::map<std::string, std::vector<int64_t>> sizes;
  for (const auto& row : doc.at("rows")) {
    const std::string op = row.at("op");
    ASSERT_TRUE(row.at("supported").get<bool>()) << row.dump();
    sizes[op].push_back(row.at("bytes"));
    EXPECT_EQ(row.at("wrong"), 0) << row.dump();
    EXPECT_GT(row.at("time_us").get<double>(), 0) << row.dump();
    EXPECT_DOUBLE_EQ(row.at("bus_factor").get<double>(), factor.at(op));
    EXPECT_NEAR(row.at("algbw_gbps").get<double>(), row.at("bytes").get<double>() / row.at("time_us").get<double>() / 1e3,
                1e-9 * row.at("algbw_gbps").get<double>());
    EXPECT_NEAR(row.at("busbw_gbps").get<double>(), row.at("algbw_gbps").get<double>() * factor.at(op),
                1e-12 + 1e-9 * row.at("busbw_gbps").get<double>());
  }
  const std::vector<int64_t> expected = {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
  ASSERT_EQ(sizes.size(), 4u);
  for (const auto& [op, got] : sizes) EXPECT_EQ(got, expected) << op;
  fs::remove_all(dir);
}

TEST(CommBench, WithoutALauncherRunsOneRankAndRejectsBadSizes) {
  const auto one = ct::run_command(ct::binary() + " comm-bench --ops all-reduce,broadcast --max-bytes 64 --iters 2 "
                                                  "--memcpy-bytes 1M --json -");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto doc = nlohmann::json::parse(one.output);
  EXPECT_EQ(doc.at("world_size"), 1);
  ASSERT_EQ(doc.at("rows").size(), 8u);  // 8..64 bytes, two collectives
  EXPECT_EQ(doc.at("rows")[0].at("busbw_gbps"), 0.0) << "an all-reduce of one rank moves nothing over a link";
  const auto bad = ct::run_command(ct::binary() + " comm-bench --min-bytes 1M --max-bytes 1K");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--max-bytes"), std::string::npos) << bad.output;
}

#endif  // CROSSTRAIN_CLI_WITH_TORCH
