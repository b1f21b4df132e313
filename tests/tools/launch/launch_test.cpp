#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "test_support.h"
#include "tools/launch/launcher.h"
#include "tools/launch/line_prefixer.h"
#include "tools/launch/nproc.h"
#include "tools/launch/output_sink.h"
#include "tools/launch/worker_env.h"

using namespace crosstrain::launch;

namespace {
LaunchShape two_nodes_of_four() {
  LaunchShape s;
  s.nproc_per_node = 4;
  s.nnodes = 2;
  s.node_rank = 1;
  s.master_addr = "10.0.0.1";
  s.master_port = 1234;
  s.max_restarts = 3;
  s.run_id = "job7";
  return s;
}
}  // namespace

TEST(WorkerEnvironment, FollowsTorchrunsContract) {
  const Environment env = worker_environment(two_nodes_of_four(), 2, 1, {});
  const Environment expected{
      {"RANK", "6"}, {"LOCAL_RANK", "2"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"},
      {"GROUP_RANK", "1"}, {"GROUP_WORLD_SIZE", "2"}, {"ROLE_NAME", "default"}, {"ROLE_RANK", "6"},
      {"ROLE_WORLD_SIZE", "8"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "1234"},
      {"TORCHELASTIC_RESTART_COUNT", "1"}, {"TORCHELASTIC_MAX_RESTARTS", "3"}, {"TORCHELASTIC_RUN_ID", "job7"},
      {"TORCHELASTIC_USE_AGENT_STORE", "False"}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"}, {"OMP_NUM_THREADS", "1"}};
  EXPECT_EQ(env, expected);
}

TEST(WorkerEnvironment, UserSettingsWin) {
  const Environment user{{"OMP_NUM_THREADS", "8"}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}};
  EXPECT_FALSE(sets_omp_threads(two_nodes_of_four(), user));
  const Environment env = worker_environment(two_nodes_of_four(), 0, 0, user);
  EXPECT_EQ(env.count("OMP_NUM_THREADS"), 0u);  // inherited, not set again
  EXPECT_EQ(env.at("TORCH_NCCL_ASYNC_ERROR_HANDLING"), "0");
  LaunchShape one;
  EXPECT_FALSE(sets_omp_threads(one, {}));  // one worker per node: torchrun leaves it alone too
  EXPECT_EQ(worker_environment(one, 0, 0, {}).count("OMP_NUM_THREADS"), 0u);
}

TEST(WorkerEnvironment, ValidateNamesTheFlag) {
  auto fails_with = [](LaunchShape s, const std::string& flag) {
    try {
      validate(s);
      ADD_FAILURE() << "accepted, expected a complaint about " << flag;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
    }
  };
  LaunchShape s = two_nodes_of_four();
  EXPECT_NO_THROW(validate(s));
  s.nproc_per_node = 0;
  fails_with(s, "--nproc-per-node");
  s.nproc_per_node = kMaxProcPerNode + 1;
  fails_with(s, "--nproc-per-node");
  s = two_nodes_of_four();
  s.node_rank = 2;
  fails_with(s, "--node-rank");
  s.node_rank = -1;
  fails_with(s, "--node-rank");
  s = two_nodes_of_four();
  s.master_port = 65536;
  fails_with(s, "--master-port");
  s.master_port = 0;  // a free port cannot be agreed between nodes
  fails_with(s, "--master-port 0");
  s.nnodes = 1;
  s.node_rank = 0;
  EXPECT_NO_THROW(validate(s));
  s.max_restarts = -1;
  fails_with(s, "--max-restarts");
}

TEST(LinePrefixer, EmitsOnlyWholeLines) {
  LinePrefixer p("[rank3]: ");
  EXPECT_EQ(p.feed("hel"), "");
  EXPECT_TRUE(p.has_partial_line());
  EXPECT_EQ(p.feed("lo\nwor"), "[rank3]: hello\n");
  EXPECT_EQ(p.feed("ld\n\nx"), "[rank3]: world\n[rank3]: \n");
  EXPECT_EQ(p.finish(), "[rank3]: x\n");
  EXPECT_EQ(p.finish(), "");
  EXPECT_FALSE(p.has_partial_line());
}

TEST(LinePrefixer, CutsOverlongLines) {
  LinePrefixer p("> ", 4);
  EXPECT_EQ(p.feed("abcdefghij"), "> abcd\n> efgh\n");
  EXPECT_EQ(p.feed("k\n"), "> ijk\n");
  EXPECT_EQ(p.feed("wxyz\n"), "> wxyz\n");  // exactly max_line bytes stays one line
}

TEST(NodeCount, StaticAndElastic) {
  auto n = parse_nnodes("3");
  EXPECT_EQ(n.min, 3);
  EXPECT_EQ(n.max, 3);
  EXPECT_FALSE(n.elastic);
  n = parse_nnodes("1:4");
  EXPECT_EQ(n.min, 1);
  EXPECT_EQ(n.max, 4);
  EXPECT_TRUE(n.elastic);
  for (const char* bad : {"", "0", "x", "2:", ":2", "3:2", "1:2:3", "1.5", "99999999999"})
    EXPECT_THROW(parse_nnodes(bad), std::invalid_argument) << bad;
}

// `--` ends torchrun's options: a worker's flag it also knows (`--log` is an abbreviation of its
// --log-dir) stays the worker's.
TEST(Torchrun, ArgumentsRunTheProgramWithoutPython) {
  ElasticRequest r;
  r.nodes = parse_nnodes("2:4");
  r.nproc_per_node = 8;
  r.rdzv_endpoint = "host:29400";
  r.run_id = "job";
  r.max_restarts = 2;
  Program program{"/opt/crosstrain", {"/opt/crosstrain", "train", "--steps", "5"}};
  const std::vector<std::string> expected{"/usr/bin/torchrun", "--nnodes=2:4", "--nproc-per-node=8",
                                          "--rdzv-backend=c10d", "--rdzv-endpoint=host:29400", "--rdzv-id=job",
                                          "--max-restarts=2", "--no-python", "--", "/opt/crosstrain", "train",
                                          "--steps", "5"};
  EXPECT_EQ(torchrun_argv("/usr/bin/torchrun", r, program), expected);
}

TEST(FindProgram, SearchesPathLikeTheShell) {
  const auto dir = crosstrain::testing::scratch_dir("find_program");
  const auto exe = dir / "tool";
  std::ofstream(exe) << "#!/bin/sh\n";
  const auto plain = dir / "plain";
  std::ofstream(plain) << "not executable\n";
  ::chmod(exe.c_str(), 0755);
  EXPECT_EQ(find_program("tool", "/nonexistent:" + dir.string()), exe.string());
  EXPECT_EQ(find_program("plain", dir.string()), "");
  EXPECT_EQ(find_program("tool", "/nonexistent"), "");
  EXPECT_EQ(find_program(exe.string(), ""), exe.string());
  EXPECT_EQ(find_program((dir / "missing").string(), dir.string()), "");
}

TEST(FreePort, IsBindable) {
  const int port = pick_free_port();
  EXPECT_GT(port, 0);
  EXPECT_LE(port, 65535);
}

TEST(NprocPerNode, VisibleListsStopAtTheFirstInvalidEntryAsTheRuntimesDo) {
  EXPECT_EQ(visible_count("", 8, true), 0);
  EXPECT_EQ(visible_count("0,1,2,3", 8, true), 4);
  EXPECT_EQ(visible_count("3, 1", 8, true), 2);
  EXPECT_EQ(visible_count("0,1,-1,2", 8, true), 2);  // -1 ends the list
  EXPECT_EQ(visible_count("0,9,1", 8, true), 1);     // no device 9
  EXPECT_EQ(visible_count("GPU-5ab3c1e2,MIG-1f2e", 8, true), 2);
  EXPECT_EQ(visible_count("GPU-5ab3c1e2", 8, false), 0);  // Ascend lists are indices only
  EXPECT_EQ(visible_count("0,1,2", 2, true), 2);
  EXPECT_EQ(visible_count("0,", 8, true), 1);
}

TEST(NprocPerNode, DeviceFilesAreCountedAndNarrowedByTheVisibleList) {
  const auto dev = crosstrain::testing::scratch_dir("nproc_dev");
  for (const char* name : {"nvidia0", "nvidia1", "nvidia2", "nvidiactl", "nvidia-uvm", "nvidia-caps", "davinci0",
                           "davinci_manager", "null"})
    std::ofstream(dev / name).put('\n');
  auto d = visible_devices({}, dev.string());
  EXPECT_EQ(d.cuda, 3);
  EXPECT_EQ(d.npu, 1);
  EXPECT_GE(d.cpus, 1);
  d = visible_devices({{"CUDA_VISIBLE_DEVICES", "2,0"}, {"ASCEND_RT_VISIBLE_DEVICES", ""}}, dev.string());
  EXPECT_EQ(d.cuda, 2);
  EXPECT_EQ(d.npu, 0);
  d = visible_devices({{"CUDA_VISIBLE_DEVICES", "0,1"}}, (dev / "absent").string());
  EXPECT_EQ(d.cuda, 0);  // a list cannot make devices the node does not have
}

TEST(NprocPerNode, WordsResolveToTheDevicesOfTheirKind) {
  const NodeDevices cpu_node{16, 0, 0}, gpu_node{64, 8, 0}, npu_node{192, 0, 8};
  EXPECT_EQ(resolve_nproc_per_node("4", cpu_node), 4);
  EXPECT_EQ(resolve_nproc_per_node("cpu", gpu_node), 64);
  EXPECT_EQ(resolve_nproc_per_node("gpu", gpu_node), 8);
  EXPECT_EQ(resolve_nproc_per_node("cuda", gpu_node), 8);
  EXPECT_EQ(resolve_nproc_per_node("npu", npu_node), 8);
  EXPECT_EQ(resolve_nproc_per_node("auto", gpu_node), 8);
  EXPECT_EQ(resolve_nproc_per_node("auto", npu_node), 8);
  EXPECT_EQ(resolve_nproc_per_node("auto", cpu_node), 16);
  EXPECT_EQ(resolve_nproc_per_node("cpu", NodeDevices{4096, 0, 0}), kMaxProcPerNode);
  for (const char* bad : {"0", "-1", "1025", "99999999999", "", "GPU", "2x", " 2", "xpu"})
    EXPECT_THROW(resolve_nproc_per_node(bad, gpu_node), std::invalid_argument) << bad;
  try {
    resolve_nproc_per_node("gpu", cpu_node);
    FAIL() << "a CPU node has no GPU";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA GPU is visible"), std::string::npos) << e.what();
  }
}

TEST(RdzvEndpoint, HostPortAndBracketedIpv6) {
  auto e = parse_endpoint("node0", kDefaultRdzvPort);
  EXPECT_EQ(e.host, "node0");
  EXPECT_EQ(e.port, 29400);
  e = parse_endpoint("10.0.0.1:1234", kDefaultRdzvPort);
  EXPECT_EQ(e.host, "10.0.0.1");
  EXPECT_EQ(e.port, 1234);
  e = parse_endpoint("[fe80::1]:29500", kDefaultRdzvPort);
  EXPECT_EQ(e.host, "fe80::1");
  EXPECT_EQ(e.port, 29500);
  EXPECT_EQ(format_endpoint(e), "[fe80::1]:29500");
  EXPECT_EQ(parse_endpoint("[::1]", 7).port, 7);
  EXPECT_EQ(format_endpoint(parse_endpoint("node0", kDefaultRdzvPort)), "node0:29400");
  for (const char* bad : {"", ":29400", "node0:", "node0:0", "node0:65536", "node0:12x", "fe80::1", "[fe80::1", "[]:1",
                          "[::1]x", "[::1]:", "a b:1", "node0:123456"})
    EXPECT_THROW(parse_endpoint(bad, kDefaultRdzvPort), std::invalid_argument) << bad;
}

// A pipe nobody reads: writes return at once, what does not fit is dropped and counted by lines,
// and everything kept arrives in order once the reader comes back.
TEST(OutputSink, NeverBlocksAndDropsWhatDoesNotFit) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const size_t capacity = 256 * 1024;
  std::string kept;
  {
    OutputSink sink(p[1], "stdout", capacity);
    const std::string line(99, 'x');
    size_t accepted = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 10000; ++i)  // 1 MB, four times the capacity plus what the pipe holds
      accepted += sink.write(line + "\n") ? 1 : 0;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    EXPECT_EQ(accepted + sink.dropped_lines(), 10000u);
    EXPECT_GT(sink.dropped_lines(), 5000u);
    EXPECT_TRUE(sink.first_drop());
    EXPECT_FALSE(sink.first_drop());  // said once
    sink.write_always("the launcher's own line\n");  // queued even now
    EXPECT_FALSE(sink.flush_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
    std::thread reader([&] {
      char buf[65536];
      ssize_t n;
      while ((n = ::read(p[0], buf, sizeof buf)) > 0) kept.append(buf, static_cast<size_t>(n));
    });
    EXPECT_TRUE(sink.flush_until(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
    EXPECT_EQ(sink.pending_bytes(), 0u);
    ::close(p[1]);  // the writer thread has nothing left to write
    reader.join();
    EXPECT_EQ(kept.size(), accepted * 100 + 24);
    EXPECT_EQ(kept.substr(kept.size() - 24), "the launcher's own line\n");
  }
  ::close(p[0]);
}

// A reader that went away (EPIPE) fails the sink; further text is discarded, never waited for.
TEST(OutputSink, AClosedReaderFailsTheSink) {
  struct sigaction ign {}, saved {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, &saved);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ::close(p[0]);
  {
    OutputSink sink(p[1], "stderr");
    sink.write("lost\n");
    EXPECT_TRUE(sink.flush_until(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
    EXPECT_TRUE(sink.failed());
    EXPECT_FALSE(sink.write("also lost\n"));
  }
  ::close(p[1]);
  ::sigaction(SIGPIPE, &saved, nullptr);
}
