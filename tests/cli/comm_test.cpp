// comm-bench and doctor --distributed through the binary: workers started with torchrun's variables
// on the loopback (Gloo on the CPU), and each misconfiguration doctor names, produced on one host,
// ending with exit 1 and a message within a bounded time.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

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
