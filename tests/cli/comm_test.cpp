// comm-bench and doctor --distributed through the binary: workers started with torchrun's variables
// on the loopback (Gloo on the CPU), and each misconfiguration doctor names, produced on one host,
// ending with exit 1 and a message within a bounded time.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "net_namespaces.h"
#include "test_support.h"
#include "worker_processes.h"

namespace ct = crosstrain::testing;
namespace fs = std::filesystem;
using ct::Clock;
using ct::Env;
using ct::free_port;
using ct::read_file;
using ct::Workers;

namespace {

Clock::time_point in_seconds(int s) { return Clock::now() + std::chrono::seconds(s); }

// One doctor --distributed process with `env`: exit 1 within `limit_s`, output naming `expect`.
void expect_doctor_problem(const std::string& name, const Env& env, const std::string& flags,
                           const std::vector<std::string>& expect, int limit_s) {
  const auto dir = ct::scratch_dir("doctor_" + name);
  Workers w(dir);
  const auto started = Clock::now();
  const int i = w.start(env, "doctor --distributed " + flags);
  const int code = w.wait(i, started + std::chrono::seconds(limit_s));
  ASSERT_NE(code, -1) << name << ": still running after " << limit_s << " s\n" << w.output(i);
  EXPECT_EQ(code, 1) << w.output(i);
  for (const auto& e : expect) EXPECT_NE(w.output(i).find(e), std::string::npos) << "'" << e << "' in:\n" << w.output(i);
  fs::remove_all(dir);
}

// A service on a port that accepts every connection and never answers (what a rendezvous client
// meets when MASTER_PORT belongs to something else, or to a process that hangs).
class SilentService {
 public:
  SilentService() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 64) != 0)
      throw std::runtime_error("cannot listen");
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;  // shut down
        accepted_.push_back(c);  // held open, never read or written
      }
    });
  }
  ~SilentService() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    for (int c : accepted_) ::close(c);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1, port_ = 0;
  std::vector<int> accepted_;
  std::thread thread_;
};

std::string this_process_name() {
  std::string name = read_file("/proc/self/comm");
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return name;
}

size_t lines_in(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

#ifdef CROSSTRAIN_CLI_WITH_TORCH

// MASTER_PORT held by a service that accepts and never answers: --dist-timeout bounds the
// rendezvous all the same, and the one line says what holds the port.
TEST(CommBench, ASilentServiceOnMasterPortEndsWithinTheTimeout) {
  SilentService silent;
  const auto dir = ct::scratch_dir("comm_silent");
  Workers w(dir);
  const auto started = Clock::now();
  const int i = w.start(Workers::torchrun(1, 2, silent.port()), "comm-bench --dist-timeout 3 --max-bytes 64");
  const int code = w.wait(i, started + std::chrono::seconds(20));
  ASSERT_NE(code, -1) << "still running 20 s after a 3 s timeout\n" << w.output(i);
  EXPECT_EQ(code, 1) << w.output(i);
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(15)) << w.output(i);
  const std::string err = read_file(w.err(i));
  EXPECT_NE(err.find("accepts connections but no rendezvous store answers there"), std::string::npos) << err;
  EXPECT_NE(err.find("held by " + this_process_name() + " (pid " + std::to_string(::getpid()) + ")"), std::string::npos)
      << err;
  EXPECT_EQ(lines_in(err), 1u) << "one line, no libtorch log:\n" << err;
  fs::remove_all(dir);
}

// Rank 0 whose MASTER_ADDR is not its own: the store starts on a free port and rank 0 cannot reach
// it; the one line names the address, not the port.
TEST(CommBench, RankZeroWithAnotherHostsAddressIsToldSoInOneLine) {
  const auto dir = ct::scratch_dir("comm_rank0_addr");
  Workers w(dir);
  const int port = free_port();
  const int i = w.start(Workers::torchrun(0, 2, port, {{"MASTER_ADDR", "10.255.255.1"}}),
                        "comm-bench --dist-timeout 2 --max-bytes 64");
  const int code = w.wait(i, in_seconds(20));
  ASSERT_NE(code, -1) << w.output(i);
  EXPECT_EQ(code, 1) << w.output(i);
  const std::string err = read_file(w.err(i));
  EXPECT_EQ(err.find("in use"), std::string::npos) << "port " << port << " was free:\n" << err;
  EXPECT_TRUE(err.find("10.255.255.1 is not an address of this host") != std::string::npos ||
              err.find("no route to 10.255.255.1") != std::string::npos)
      << err;
  EXPECT_EQ(lines_in(err), 1u) << "one line, no libtorch log:\n" << err;
  fs::remove_all(dir);
}

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

TEST(CommBench, IntegerAndSixteenBitTypesAreCheckedExactly) {
  for (const std::string dtype : {"int64", "bfloat16"}) {
    const auto dir = ct::scratch_dir("comm_bench_" + dtype);
    const int port = free_port();
    Workers w(dir);
    for (int r = 0; r < 2; ++r)
      w.start(Workers::torchrun(r, 2, port), "comm-bench --dtype " + dtype + " --max-bytes 1K --iters 1 --memcpy-bytes 0");
    for (int r = 0; r < 2; ++r) ASSERT_EQ(w.wait(r, in_seconds(60)), 0) << dtype << "\n" << w.output(r);
    EXPECT_NE(read_file(w.out(0)).find("every result exact"), std::string::npos) << read_file(w.out(0));
    EXPECT_NE(read_file(w.out(0)).find(", " + dtype + ", "), std::string::npos) << read_file(w.out(0));
    fs::remove_all(dir);
  }
}

TEST(DoctorDistributed, TwoRanksListBothRanksWithTheirInterface) {
  const auto dir = ct::scratch_dir("doctor_2");
  const int port = free_port();
  const std::string json = (dir / "doctor.json").string();
  Workers w(dir);
  for (int r = 0; r < 2; ++r) w.start(Workers::torchrun(r, 2, port), "doctor --distributed --dist-timeout 20 --json " + json);
  for (int r = 0; r < 2; ++r) ASSERT_EQ(w.wait(r, in_seconds(60)), 0) << w.output(r);
  EXPECT_EQ(read_file(w.out(1)), "") << "only rank 0 reports";
  const std::string out = read_file(w.out(0));
  EXPECT_NE(out.find("2 ranks over gloo"), std::string::npos) << out;
  EXPECT_NE(out.find("interface lo (127.0.0.1)"), std::string::npos) << out;
  std::ifstream in(json);
  const auto doc = nlohmann::json::parse(in);
  EXPECT_TRUE(doc.at("ok").get<bool>());
  const auto& ranks = doc.at("distributed").at("ranks");
  ASSERT_EQ(ranks.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r].at("rank"), r);
    EXPECT_EQ(ranks[r].at("interface"), "lo");
    EXPECT_EQ(ranks[r].at("address"), "127.0.0.1");
    EXPECT_GT(ranks[r].at("latency_us").get<double>(), 0);
  }
  fs::remove_all(dir);
}

TEST(DoctorDistributed, AnAddressThatDoesNotResolveIsNamedAtOnce) {
  expect_doctor_problem("resolve", Workers::torchrun(1, 2, free_port(), {{"MASTER_ADDR", "no-such-host.invalid"}}),
                        "--dist-timeout 60", {"MASTER_ADDR", "'no-such-host.invalid' does not resolve"}, 20);
}

TEST(DoctorDistributed, AnUnreachableAddressEndsWithinTheTimeout) {
  expect_doctor_problem("unreachable", Workers::torchrun(1, 2, free_port(), {{"MASTER_ADDR", "10.255.255.1"}}),
                        "--dist-timeout 2", {"cannot reach the rendezvous store at 10.255.255.1"}, 25);
}

TEST(DoctorDistributed, NoRankZeroListeningIsNamed) {
  const int port = free_port();
  expect_doctor_problem("closed_port", Workers::torchrun(1, 2, port), "--dist-timeout 2",
                        {"nothing listens on 127.0.0.1:" + std::to_string(port)}, 25);
}

TEST(DoctorDistributed, ATakenPortOnRankZeroIsNamedAtOnce) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  expect_doctor_problem("port_taken", Workers::torchrun(0, 2, port), "--dist-timeout 60",
                        {"MASTER_PORT", std::to_string(port) + " cannot be listened on"}, 20);
  ::close(fd);
}

TEST(DoctorDistributed, MalformedLauncherVariablesAreNamed) {
  expect_doctor_problem("bad_env", Workers::torchrun(0, 2, 99999), "", {"MASTER_PORT='99999'"}, 20);
}

TEST(DoctorDistributed, SeveralNodesOverTheLoopbackAreAProblem) {
  // Two nodes of one process each (LOCAL_WORLD_SIZE 1) cannot meet at 127.0.0.1.
  expect_doctor_problem("loopback_nodes", Workers::torchrun(0, 2, free_port(), {{"LOCAL_WORLD_SIZE", "1"}}), "",
                        {"the job has 2 nodes", "MASTER_ADDR 127.0.0.1 is a loopback address", "not attempted"}, 20);
  expect_doctor_problem("loopback_gloo",
                        Workers::torchrun(1, 2, free_port(),
                                          {{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"}, {"GLOO_SOCKET_IFNAME", "lo"}}),
                        "",
                        {"GLOO_SOCKET_IFNAME names the loopback (lo)"}, 20);
}

TEST(DoctorDistributed, ASilentServiceOnMasterPortIsNamedWithinTheTimeout) {
  SilentService silent;
  expect_doctor_problem("silent", Workers::torchrun(1, 2, silent.port()), "--dist-timeout 3",
                        {"PROBLEM  rendezvous", "accepts connections but no rendezvous store answers there",
                         "held by " + this_process_name()},
                        15);
}

// A rank whose own checks fail tells rank 0, which stops waiting and names it and its problem,
// long before the timeout, instead of blaming MASTER_ADDR and MASTER_PORT.
TEST(DoctorDistributed, ARankThatFailsItsChecksIsNamedByRankZeroAtOnce) {
  const auto dir = ct::scratch_dir("doctor_tells");
  const int port = free_port();
  Workers w(dir);
  const auto started = Clock::now();
  w.start(Workers::torchrun(0, 2, port), "doctor --distributed --dist-timeout 60");
  w.start(Workers::torchrun(1, 2, port, {{"GLOO_SOCKET_IFNAME", "nosuchif0"}}), "doctor --distributed --dist-timeout 60");
  for (int i = 0; i < 2; ++i) {
    const int code = w.wait(i, started + std::chrono::seconds(25));
    ASSERT_NE(code, -1) << "rank " << i << " still waits\n" << w.output(i);
    EXPECT_EQ(code, 1) << w.output(i);
  }
  const std::string rank0 = read_file(w.out(0));
  EXPECT_NE(rank0.find("PROBLEM  rank 1"), std::string::npos) << rank0;
  EXPECT_NE(rank0.find("GLOO_SOCKET_IFNAME=nosuchif0: no interface 'nosuchif0'"), std::string::npos) << rank0;
  EXPECT_EQ(rank0.find("MASTER_PORT and WORLD_SIZE"), std::string::npos) << rank0;
  EXPECT_NE(read_file(w.err(1)).find("rank 0 was told that this rank will not join"), std::string::npos) << w.output(1);
  fs::remove_all(dir);
}

// Rank 0 of a two-node job (MASTER_ADDR is its own address, on va) naming a second interface of its
// host that is off MASTER_ADDR's network: the other node could not reach the address Gloo gives it
// there. Naming va passes. Two hosts made of network namespaces (root).
TEST(DoctorDistributed, RankZeroNamingAnInterfaceOffMasterAddrsNetworkIsAProblem) {
  ct::NetNamespaces net;
  if (!net.available()) GTEST_SKIP() << net.why_not();
  const std::string a = net.add("a"), b = net.add("b");
  ASSERT_FALSE(a.empty() || b.empty()) << net.last_error();
  ASSERT_TRUE(net.link(a, "va", "10.77.0.1/24", b, "vb", "10.77.0.2/24")) << net.last_error();
  ASSERT_TRUE(net.link(a, "vx", "10.88.0.1/24", a, "vy", "10.88.0.2/24")) << net.last_error();
  const auto dir = ct::scratch_dir("doctor_rank0_ifname");
  for (const std::string ifname : {"vx", "va"}) {
    Workers w(dir);
    const int i = w.start(Workers::torchrun(0, 2, free_port(),
                                            {{"MASTER_ADDR", "10.77.0.1"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"},
                                             {"GLOO_SOCKET_IFNAME", ifname}}),
                          "doctor --distributed --dist-timeout 3", ct::NetNamespaces::exec(a));
    ASSERT_NE(w.wait(i, in_seconds(30)), -1) << w.output(i);  // exit 1 either way: rank 1 never comes
    if (ifname == "vx") {
      EXPECT_NE(w.output(i).find("GLOO_SOCKET_IFNAME=vx: vx is not on the network of MASTER_ADDR 10.77.0.1"),
                std::string::npos)
          << w.output(i);
      EXPECT_NE(w.output(i).find("not attempted"), std::string::npos) << w.output(i);
    } else {
      EXPECT_TRUE(std::regex_search(w.output(i), std::regex("\nok +GLOO_SOCKET_IFNAME +GLOO_SOCKET_IFNAME=va\n")))
          << w.output(i);
    }
  }
  fs::remove_all(dir);
}

TEST(DoctorDistributed, AMismatchedWorldSizeIsNamed) {
  const auto dir = ct::scratch_dir("doctor_world");
  const int port = free_port();
  Workers w(dir);
  w.start(Workers::torchrun(0, 2, port), "doctor --distributed --dist-timeout 5");
  w.start(Workers::torchrun(1, 3, port), "doctor --distributed --dist-timeout 5");
  for (int i = 0; i < 2; ++i) {
    const int code = w.wait(i, in_seconds(30));
    ASSERT_NE(code, -1) << w.output(i);
    EXPECT_EQ(code, 1) << w.output(i);
  }
  EXPECT_NE(w.output(0).find("has WORLD_SIZE=3, this rank (0) has 2"), std::string::npos) << w.output(0);
  EXPECT_NE(w.output(1).find("PROBLEM  rendezvous"), std::string::npos) << w.output(1);
  EXPECT_EQ(w.output(1).find("Exception raised from"), std::string::npos) << "no c10 stacks:\n" << w.output(1);
  fs::remove_all(dir);
}

TEST(DoctorDistributed, InterfaceVariablesNamingNoInterfaceAreProblems) {
  expect_doctor_problem("ifname",
                        Workers::torchrun(0, 1, free_port(), {{"GLOO_SOCKET_IFNAME", "nosuchif0"},
                                                              {"NCCL_SOCKET_IFNAME", "nosuch"},
                                                              {"HCCL_SOCKET_IFNAME", "=lo,nosuchif1"}}),
                        "", {"GLOO_SOCKET_IFNAME=nosuchif0: no interface 'nosuchif0'",
                             "NCCL_SOCKET_IFNAME=nosuch: no interface starting with 'nosuch'",
                             "HCCL_SOCKET_IFNAME==lo,nosuchif1: no interface 'nosuchif1'", "not attempted"},
                        20);
}

TEST(DoctorDistributed, AnInterfaceWithoutARouteToTheStoreIsAProblem) {
  expect_doctor_problem("no_route",
                        Workers::torchrun(1, 2, free_port(), {{"MASTER_ADDR", "10.255.255.1"}, {"GLOO_SOCKET_IFNAME", "lo"}}),
                        "--dist-timeout 60", {"GLOO_SOCKET_IFNAME=lo: lo has no route to MASTER_ADDR 10.255.255.1"}, 20);
}

TEST(DoctorDistributed, AnInterfaceVariableThatFitsPasses) {
  const auto dir = ct::scratch_dir("doctor_ifname_ok");
  Workers w(dir);
  const int i = w.start(Workers::torchrun(0, 1, free_port(), {{"GLOO_SOCKET_IFNAME", "lo"}, {"NCCL_SOCKET_IFNAME", "l"}}),
                        "doctor --distributed --dist-timeout 20");
  ASSERT_EQ(w.wait(i, in_seconds(30)), 0) << w.output(i);
  EXPECT_NE(w.output(i).find("NCCL_SOCKET_IFNAME=l -> lo"), std::string::npos) << w.output(i);
  fs::remove_all(dir);
}

#endif  // CROSSTRAIN_CLI_WITH_TORCH
