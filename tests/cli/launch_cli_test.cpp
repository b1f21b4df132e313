// `crosstrain launch` through the binary: the worker environment, rank-prefixed output, failures,
// signals (also while nobody reads the launcher's output), restarts, free ports, crosstrain commands
// and Python as workers, usage errors.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace fs = std::filesystem;
using crosstrain::testing::binary;
using crosstrain::testing::run_command;

namespace {

std::string launch(const std::string& args) { return binary() + " launch " + args; }

// Single quotes for the shell around a worker script.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Timed {
  crosstrain::testing::CommandResult result;
  double seconds;
};
Timed timed(const std::string& cmd) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_command(cmd);
  return {r, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

}  // namespace

TEST(Launch, EveryWorkerGetsTorchrunsEnvironment) {
  const std::string script =
      "echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $GROUP_WORLD_SIZE $ROLE_NAME $ROLE_RANK "
      "$ROLE_WORLD_SIZE $MASTER_ADDR $MASTER_PORT $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS "
      "$TORCHELASTIC_RUN_ID $TORCHELASTIC_USE_AGENT_STORE $TORCH_NCCL_ASYNC_ERROR_HANDLING $OMP_NUM_THREADS "
      "${KEPT}";
  // Node 1 of 2 (a static multi-node launch starts its workers without the other node).
  auto r = run_command("env -u OMP_NUM_THREADS KEPT=inherited " +
                       launch("--nproc-per-node 3 --nnodes 2 --node-rank 1 --master-addr 10.1.2.3 --master-port 4567 "
                              "--max-restarts 2 --rdzv-id job42 -- /bin/sh -c " + quoted(script)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int local = 0; local < 3; ++local) {
    const int rank = 3 + local;
    const std::string expected = "[rank" + std::to_string(rank) + "]: " + std::to_string(rank) + " " +
                                 std::to_string(local) + " 6 3 1 2 default " + std::to_string(rank) +
                                 " 6 10.1.2.3 4567 0 2 job42 False 1 1 inherited\n";
    EXPECT_EQ(count_of(r.output, expected), 1u) << expected << r.output;
  }
  EXPECT_NE(r.output.find("OMP_NUM_THREADS=1"), std::string::npos) << r.output;  // said once
  EXPECT_EQ(count_of(r.output, "OMP_NUM_THREADS"), 1u) << r.output;

  // Defaults; the user's OMP_NUM_THREADS wins and nothing is said about it.
  auto d = run_command("OMP_NUM_THREADS=3 RANK=99 " + launch("--nproc-per-node 2 -- /bin/sh -c " + quoted(script)));
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_EQ(count_of(d.output, "[rank0]: 0 0 2 2 0 1 default 0 2 127.0.0.1 29500 0 0 none False 1 3\n"), 1u) << d.output;
  EXPECT_EQ(count_of(d.output, "[rank1]: 1 1 2 2 0 1 default 1 2 127.0.0.1 29500 0 0 none False 1 3\n"), 1u) << d.output;
  EXPECT_EQ(d.output.find("crosstrain launch:"), std::string::npos) << d.output;
}

TEST(Launch, ConcurrentOutputArrivesAsWholePrefixedLines) {
  const auto dir = crosstrain::testing::scratch_dir("launch_lines");
  // Every line is written in three pieces (three write(2) calls), on stdout and on stderr.
  const std::string script =
      "i=0; while [ $i -lt 300 ]; do printf 'head-%s-' $RANK; printf 'middle-%s-' $i; printf 'tail-%s\\n' $RANK; "
      "printf 'err-%s-' $RANK >&2; printf 'end-%s\\n' $RANK >&2; i=$((i+1)); done; printf 'no-newline-%s' $RANK";
  auto r = run_command("(" + launch("--nproc-per-node 4 -- /bin/sh -c " + quoted(script)) + " 2>" +
                           (dir / "err").string() + ")",
                       false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::regex out_line(R"(\[rank(\d)\]: (head-(\d)-middle-\d+-tail-(\d)|no-newline-(\d)))");
  std::map<std::string, int> per_rank;
  for (const auto& line : lines_of(r.output)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, out_line)) << "mixed or unprefixed line: " << line;
    if (m[3].matched) {
      EXPECT_EQ(m[1], m[3]) << line;
      EXPECT_EQ(m[1], m[4]) << line;
    } else {
      EXPECT_EQ(m[1], m[5]) << line;  // the last, unterminated line still arrives, on a line of its own
    }
    ++per_rank[m[1]];
  }
  EXPECT_EQ(per_rank, (std::map<std::string, int>{{"0", 301}, {"1", 301}, {"2", 301}, {"3", 301}}));

  const std::regex err_line(R"(\[rank(\d)\]: err-(\d)-end-(\d))");
  std::map<std::string, int> err_per_rank;
  for (const auto& line : lines_of(read_file(dir / "err"))) {
    if (line.rfind("crosstrain launch: ", 0) == 0) continue;  // the launcher's own note
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, err_line)) << "mixed or unprefixed line: " << line;
    EXPECT_EQ(m[1], m[2]) << line;
    EXPECT_EQ(m[1], m[3]) << line;
    ++err_per_rank[m[1]];
  }
  EXPECT_EQ(err_per_rank, (std::map<std::string, int>{{"0", 300}, {"1", 300}, {"2", 300}, {"3", 300}}));

  auto plain = run_command(launch("--no-prefix --nproc-per-node 2 -- /bin/sh -c 'echo plain-$RANK'"), false);
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_EQ(count_of(plain.output, "plain-0\n"), 1u) << plain.output;
  EXPECT_EQ(count_of(plain.output, "plain-1\n"), 1u) << plain.output;
  EXPECT_EQ(plain.output.find("[rank"), std::string::npos) << plain.output;
}

TEST(Launch, FirstFailureStopsTheOthersAndGivesItsStatus) {
  // Rank 1 fails; the others would sleep for 1000 s and are stopped by SIGTERM.
  auto t = timed(launch("--nproc-per-node 3 -- /bin/sh -c "
                        "'if [ $RANK = 1 ]; then sleep 0.2; exit 3; fi; exec sleep 1000'"));
  EXPECT_EQ(t.result.exit_code, 3) << t.result.output;
  EXPECT_LT(t.seconds, 5.0) << t.result.output;
  EXPECT_NE(t.result.output.find("rank 1 (local rank 1) failed: exit code 3; exiting with 3"), std::string::npos)
      << t.result.output;

  // Workers that ignore SIGTERM get SIGKILL once the grace time is over.
  t = timed(launch("--nproc-per-node 2 --kill-timeout 1 -- /bin/sh -c "
                   "'trap \"\" TERM; if [ $RANK = 0 ]; then sleep 0.2; kill -9 $$; fi; sleep 1000'"));
  EXPECT_EQ(t.result.exit_code, 128 + 9) << t.result.output;
  EXPECT_GE(t.seconds, 1.0) << t.result.output;
  EXPECT_LT(t.seconds, 5.0) << t.result.output;
  EXPECT_NE(t.result.output.find("rank 0 (local rank 0) failed: killed by SIGKILL"), std::string::npos)
      << t.result.output;
  EXPECT_NE(t.result.output.find("sending SIGKILL"), std::string::npos) << t.result.output;
}

TEST(Launch, SignalsAreForwardedToEveryWorker) {
  const auto dir = crosstrain::testing::scratch_dir("launch_signal");
  const std::string d = dir.string();
  const std::string worker = "trap 'echo got > " + d + "/term.$RANK; exit 9' TERM; touch " + d +
                             "/ready.$RANK; sleep 1000 & wait";
  // The launcher in the background; SIGTERM once both workers are ready.
  const std::string script =
      launch("--nproc-per-node 2 -- /bin/sh -c " + quoted(worker)) + " & pid=$!; " +
      "for i in $(seq 200); do [ -f " + d + "/ready.0 ] && [ -f " + d + "/ready.1 ] && break; sleep 0.05; done; " +
      "kill -TERM $pid; wait $pid; echo status=$?";
  auto t = timed("/bin/sh -c " + quoted(script));
  EXPECT_NE(t.result.output.find("status=143"), std::string::npos) << t.result.output;
  EXPECT_EQ(read_file(dir / "term.0"), "got\n");
  EXPECT_EQ(read_file(dir / "term.1"), "got\n");
  EXPECT_LT(t.seconds, 10.0);
  EXPECT_NE(t.result.output.find("got SIGTERM: forwarding it to the workers"), std::string::npos) << t.result.output;

  // Workers that ignore it: a second signal kills them at once, long before --kill-timeout.
  fs::remove(dir / "ready.0");
  fs::remove(dir / "ready.1");
  const std::string stubborn = "trap '' TERM; touch " + d + "/ready.$RANK; sleep 1000";
  const std::string twice =
      launch("--nproc-per-node 2 --kill-timeout 60 -- /bin/sh -c " + quoted(stubborn)) + " & pid=$!; " +
      "for i in $(seq 200); do [ -f " + d + "/ready.0 ] && [ -f " + d + "/ready.1 ] && break; sleep 0.05; done; " +
      "kill -TERM $pid; sleep 0.3; kill -TERM $pid; wait $pid; echo status=$?";
  t = timed("/bin/sh -c " + quoted(twice));
  EXPECT_NE(t.result.output.find("status=143"), std::string::npos) << t.result.output;
  EXPECT_NE(t.result.output.find("again: sending SIGKILL"), std::string::npos) << t.result.output;
  EXPECT_LT(t.seconds, 10.0);
}

TEST(Launch, RestartsAllWorkersUpToMaxRestarts) {
  // Fails on the first attempt, succeeds on the second.
  auto r = run_command(launch("--nproc-per-node 2 --max-restarts 3 -- /bin/sh -c "
                              "'echo attempt $TORCHELASTIC_RESTART_COUNT of $TORCHELASTIC_MAX_RESTARTS; "
                              "[ $TORCHELASTIC_RESTART_COUNT = 1 ] || exit 5'"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("failed: exit code 5; restarting all 2 local workers (restart 1 of 3)"), std::string::npos)
      << r.output;
  EXPECT_EQ(count_of(r.output, "]: attempt 1 of 3\n"), 2u) << r.output;
  EXPECT_EQ(count_of(r.output, "]: attempt 2"), 0u) << r.output;

  // Out of restarts: the last failure's status.
  r = run_command(launch("--nproc-per-node 1 --max-restarts 1 -- /bin/sh -c 'echo try; exit 4'"));
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(count_of(r.output, "[rank0]: try\n"), 2u) << r.output;
  EXPECT_NE(r.output.find("exit code 4 after 1 restart(s); exiting with 4"), std::string::npos) << r.output;
}

TEST(Launch, MasterPortZeroPicksOneFreePortForAll) {
  auto r = run_command(launch("--nproc-per-node 2 --master-port 0 -- /bin/sh -c 'echo port=$MASTER_PORT'"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(\[rank0\]: port=(\d+))"))) << r.output;
  const int port = std::stoi(m[1]);
  EXPECT_GT(port, 0);
  EXPECT_LE(port, 65535);
  EXPECT_EQ(count_of(r.output, "[rank1]: port=" + m[1].str() + "\n"), 1u) << r.output;
  EXPECT_NE(r.output.find("MASTER_PORT=" + m[1].str() + " (a free port)"), std::string::npos) << r.output;
}

TEST(Launch, TakesTorchrunsSpellingsAndStandalone) {
  // A command line copied from torchrun: underscores, '=' values, --standalone, a symbolic count.
  auto r = run_command("env -u CUDA_VISIBLE_DEVICES " +
                       launch("--standalone --nproc_per_node=cpu --max_restarts=0 --rdzv_id=job9 -- /bin/sh -c "
                              "'echo $RANK/$WORLD_SIZE $MASTER_ADDR $TORCHELASTIC_RUN_ID port=$MASTER_PORT'"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int cpus = CPU_COUNT(&set);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(\[rank0\]: 0/(\d+) 127\.0\.0\.1 job9 port=(\d+))"))) << r.output;
  EXPECT_EQ(std::stoi(m[1]), std::min(cpus, 1024)) << r.output;  // one worker per CPU
  EXPECT_NE(m[2].str(), "29500") << r.output;  // standalone: a free port, not the default
  EXPECT_NE(r.output.find("--nproc-per-node cpu: " + m[1].str() + " workers"), std::string::npos) << r.output;

  auto node = run_command(launch("--nproc_per_node 2 --node_rank=0 --master_addr=127.0.0.1 --master_port=0 -- "
                                 "/bin/sh -c 'echo ok-$RANK'"));
  EXPECT_EQ(node.exit_code, 0) << node.output;
  EXPECT_EQ(count_of(node.output, "[rank1]: ok-1\n"), 1u) << node.output;

  // A static rendezvous endpoint is rank 0's node.
  auto endpoint = run_command(launch("--nproc-per-node 2 --rdzv-backend static --rdzv_endpoint=127.0.0.1:4567 -- "
                                     "/bin/sh -c 'echo at-$MASTER_ADDR-$MASTER_PORT'"));
  EXPECT_EQ(endpoint.exit_code, 0) << endpoint.output;
  EXPECT_EQ(count_of(endpoint.output, "]: at-127.0.0.1-4567\n"), 2u) << endpoint.output;
}

TEST(Launch, RunsCrosstrainCommandsAndPython) {
  // A crosstrain command name after '--' runs this same crosstrain.
  auto r = run_command(launch("--nproc-per-node 2 -- analyze --help"), false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "[rank1]: Usage:"), 1u) << r.output;

  auto py = run_command(launch("--nproc-per-node 2 -- " + crosstrain::testing::python() +
                               " -c 'import os; print(os.environ[\"RANK\"], os.environ[\"WORLD_SIZE\"])'"),
                        false);
  EXPECT_EQ(py.exit_code, 0) << py.output;
  EXPECT_EQ(count_of(py.output, "[rank0]: 0 2\n"), 1u) << py.output;
  EXPECT_EQ(count_of(py.output, "[rank1]: 1 2\n"), 1u) << py.output;

  // A script named alone runs with the Python on PATH, as torchrun runs it, with its own flags.
  const auto dir = crosstrain::testing::scratch_dir("launch_script");
  std::ofstream(dir / "worker.py") << "import os, sys\nprint(os.environ['RANK'], sys.argv[1:], '-u' in sys.orig_argv)\n";
  const std::string python_dir = std::filesystem::path(crosstrain::testing::python()).parent_path().string();
  auto script = run_command("cd " + dir.string() + " && PATH=" + python_dir + ":/usr/bin:/bin " +
                            launch("--nproc-per-node 2 -- worker.py --epochs 1"));
  EXPECT_EQ(script.exit_code, 0) << script.output;
  EXPECT_EQ(count_of(script.output, "[rank1]: 1 ['--epochs', '1'] True\n"), 1u) << script.output;
  EXPECT_NE(script.output.find("with " + python_dir + "/python"), std::string::npos) << script.output;
}

TEST(Launch, UsageErrorsAreOneLineAndExitTwo) {
  for (const std::string& args : std::vector<std::string>{
           "--nproc-per-node 2", "--nproc-per-node 2 --", "--nproc-per-node 0 -- true", "--nproc-per-node 1025 -- true",
           "--nnodes 2 --node-rank 2 -- true", "--master-port 70000 -- true", "--nnodes 2 --master-port 0 -- true",
           "--nnodes 0 -- true", "--max-restarts -1 -- true", "--kill-timeout -1 -- true", "-- no-such-program-xyz",
           "-- ./no/such/file", "-- launch -- true", "extra -- true", "--nproc-per-node xpu -- true",
           "--standalone --master-port 29511 -- true", "--standalone --nnodes 2 -- true", "--rdzv-backend etcd -- true",
           "--rdzv-endpoint fe80::1 -- true", "--rdzv-endpoint node0:0 -- true",
           "--rdzv-endpoint node0:1 --master-addr node1 -- true", "--standalone --rdzv-endpoint node0 -- true"}) {
    auto r = run_command(launch(args));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_EQ(count_of(r.output, "\n"), 1u) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("crosstrain: error: ", 0), 0u) << args << "\n" << r.output;
  }
  auto missing = run_command(launch("--nproc-per-node 2 --"));
  EXPECT_NE(missing.output.find("after '--'"), std::string::npos) << missing.output;
}

TEST(Launch, ElasticNodeCountsGoToTorchrun) {
  const auto dir = crosstrain::testing::scratch_dir("launch_torchrun");
  const auto fake = dir / "torchrun";
  std::ofstream(fake) << "#!/bin/sh\necho torchrun \"$@\"\nexit 6\n";
  ::chmod(fake.c_str(), 0755);
  auto r = run_command("PATH=" + dir.string() + ":/usr/bin:/bin " +
                       launch("--nnodes 1:4 --nproc-per-node 2 --master-addr node0 --master-port 29400 "
                              "--rdzv-id job --max-restarts 1 -- train --steps 5"));
  EXPECT_EQ(r.exit_code, 6) << r.output;  // torchrun's own status
  const std::string self = fs::canonical(binary()).string();
  EXPECT_NE(r.output.find("torchrun --nnodes=1:4 --nproc-per-node=2 --rdzv-backend=c10d --rdzv-endpoint=node0:29400 "
                          "--rdzv-id=job --max-restarts=1 --no-python -- " + self + " train --steps 5\n"),
            std::string::npos)
      << r.output;

  // torchrun's c10d rendezvous with a fixed node count: nodes join without --node-rank.
  auto c10d = run_command("PATH=" + dir.string() + ":/usr/bin:/bin " +
                          launch("--nnodes=2 --nproc_per_node=4 --rdzv_backend=c10d --rdzv_endpoint=[fe80::1] "
                                 "--rdzv_id=7 -- /bin/true"));
  EXPECT_EQ(c10d.exit_code, 6) << c10d.output;
  EXPECT_NE(c10d.output.find("torchrun --nnodes=2:2 --nproc-per-node=4 --rdzv-backend=c10d "
                             "--rdzv-endpoint=[fe80::1]:29400 --rdzv-id=7 --max-restarts=0 --no-python -- /bin/true\n"),
            std::string::npos)
      << c10d.output;

  auto none = run_command("PATH=/nonexistent " + launch("--nnodes 1:4 -- /bin/true"));
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("needs torchrun on PATH"), std::string::npos) << none.output;
}

TEST(Launch, WorkersLeaveNothingRunning) {
  const auto dir = crosstrain::testing::scratch_dir("launch_leftovers");
  const auto pid_file = dir / "pid";
  // The worker exits at once and leaves a background child that holds its stdout open.
  auto t = timed(launch("--nproc-per-node 1 -- /bin/sh -c 'sleep 1000 & echo $! > " + pid_file.string() + "; exit 0'"));
  EXPECT_EQ(t.result.exit_code, 0) << t.result.output;
  EXPECT_LT(t.seconds, 5.0);
  std::string pid = read_file(pid_file);
  ASSERT_FALSE(pid.empty());
  pid.erase(pid.find_last_not_of("\n") + 1);
  // Gone, or a zombie its new parent has not reaped yet ("PID (sleep) Z ..."), within moments: the
  // SIGKILL was sent before the launcher returned, the kernel ends the process right after.
  auto dead = [&] {
    const std::string stat = read_file("/proc/" + pid + "/stat");
    return stat.empty() || stat.find(") Z ") != std::string::npos;
  };
  for (int i = 0; i < 100 && !dead(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(dead()) << "the worker's child is still running: " << read_file("/proc/" + pid + "/stat");
}


namespace {

// `crosstrain launch ARGS` with its stdout on a pipe that nobody reads (a paused terminal, a `| tee`
// that stalled), and its stderr there too or in `err_file`. The read end stays open in this process
// until the launcher is gone, so writes block instead of failing.
struct StalledLaunch {
  pid_t pid = -1;
  int read_end = -1;

  StalledLaunch(const std::string& args, const fs::path& err_file) {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("pipe");
    read_end = p[0];
    pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      ::dup2(p[1], 1);
      if (err_file.empty()) ::dup2(p[1], 2);
      const std::string cmd = "exec " + launch(args) + (err_file.empty() ? "" : " 2> " + err_file.string());
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(p[1]);
  }
  ~StalledLaunch() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    ::close(read_end);
  }
  // The launcher's exit status, or -1 when it still runs `seconds` from now (then it is killed).
  int wait(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
};

bool process_gone(const std::string& pid) {
  const std::string stat = read_file("/proc/" + pid + "/stat");
  return stat.empty() || stat.find(") Z ") != std::string::npos;
}

// Waits for `n` files dir/pid.RANK and returns their pids.
std::vector<std::string> worker_pids(const fs::path& dir, int n) {
  std::vector<std::string> pids;
  for (int i = 0; i < 400 && pids.size() < static_cast<size_t>(n); ++i) {
    pids.clear();
    for (int r = 0; r < n; ++r) {
      std::string pid = read_file(dir / ("pid." + std::to_string(r)));
      if (pid.empty() || pid.back() != '\n') break;
      pid.pop_back();
      pids.push_back(pid);
    }
    if (pids.size() < static_cast<size_t>(n)) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return pids;
}

}  // namespace

// Workers write as fast as they can to a launcher whose stdout nobody reads: SIGTERM, a second
// signal and SIGINT still stop the launch within seconds, and no worker is left. The lines that did
// not fit are dropped and counted, never waited for.
TEST(Launch, SignalsStopTheLaunchWhileItsOutputIsNotRead) {
  const auto dir = crosstrain::testing::scratch_dir("launch_stalled");
  struct Case {
    std::string name;
    bool workers_ignore_term;
    bool stderr_too;  // the launcher's own messages go to the stalled pipe as well
    std::vector<int> signals;
  };
  for (const Case& c : std::vector<Case>{{"term", false, false, {SIGTERM}},
                                          {"int", false, true, {SIGINT}},
                                          {"term-then-term", true, true, {SIGTERM, SIGTERM}},
                                          {"term-then-int", true, false, {SIGTERM, SIGINT}}}) {
    const fs::path d = dir / c.name;
    fs::create_directories(d);
    const std::string worker = std::string(c.workers_ignore_term ? "trap '' TERM; " : "") + "echo $$ > " + d.string() +
                               "/pid.$RANK; exec yes 'a line of worker output that nobody reads'";
    const fs::path err = c.stderr_too ? fs::path() : d / "err.txt";
    StalledLaunch run("--nproc-per-node 2 --kill-timeout 60 -- /bin/sh -c " + quoted(worker), err);
    const auto pids = worker_pids(d, 2);
    ASSERT_EQ(pids.size(), 2u) << c.name << ": the workers did not start";
    // The pipe is long full; with stderr apart, wait until the launcher says it drops lines.
    for (int i = 0; i < 200 && !err.empty() && read_file(err).find("is not taking") == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (size_t i = 0; i < c.signals.size(); ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ASSERT_EQ(::kill(run.pid, c.signals[i]), 0) << c.name;
    }
    const int status = run.wait(10);
    ASSERT_NE(status, -1) << c.name << ": the launcher still ran 10 s after the signal";
    EXPECT_EQ(status, 128 + c.signals[0]) << c.name << "\n" << read_file(err);
    for (const auto& pid : pids) {
      for (int i = 0; i < 100 && !process_gone(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      EXPECT_TRUE(process_gone(pid)) << c.name << ": worker " << pid << " is still running";
    }
    if (!err.empty()) {
      const std::string said = read_file(err);
      EXPECT_NE(said.find("stdout is not taking the workers' output"), std::string::npos) << said;
      EXPECT_NE(said.find("line(s) of the workers' stdout were dropped"), std::string::npos) << said;
    }
  }
}

// The same stalled stdout with workers that end by themselves: the launch ends with their status
// once the reader takes what was kept (here: once it is drained), and says how much was dropped.
TEST(Launch, OutputKeptForASlowReaderArrivesWhole) {
  const auto dir = crosstrain::testing::scratch_dir("launch_slow_reader");
  // 20,000 lines of ~60 bytes (1.2 MB, far more than a pipe holds, less than the launcher keeps).
  const std::string worker = "i=0; while [ $i -lt 20000 ]; do echo \"rank $RANK line $i of the output to keep\"; "
                             "i=$((i+1)); done";
  StalledLaunch run("--nproc-per-node 1 -- /bin/sh -c " + quoted(worker), dir / "err.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The reader comes back after a while and reads everything.
  std::string got;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(run.read_end, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(run.wait(10), 0) << read_file(dir / "err.txt");
  EXPECT_EQ(count_of(got, "\n"), 20000u);
  EXPECT_EQ(count_of(got, "[rank0]: rank 0 line 19999 of the output to keep\n"), 1u);
  EXPECT_EQ(read_file(dir / "err.txt").find("dropped"), std::string::npos) << read_file(dir / "err.txt");
}
