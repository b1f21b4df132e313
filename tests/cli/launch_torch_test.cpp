// `crosstrain launch` with workers that load libtorch, so seconds to tens of seconds (labelled slow):
// engine commands as workers, and real torch.distributed workers (the .venv Python, Gloo on the
// CPU): env:// initialisation finds everything it needs in the launcher's environment, rank 0 hosts
// the TCPStore (no agent store), and a restart reuses MASTER_PORT; an elastic launch handed over to
// the real torchrun.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "test_support.h"
#include "worker_processes.h"

namespace fs = std::filesystem;
using crosstrain::testing::free_port;
using crosstrain::testing::binary;
using crosstrain::testing::run_command;

namespace {
std::string launch(const std::string& args) { return binary() + " launch " + args; }

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST(LaunchTorch, GlooAllReduceAndARestart) {
  const auto dir = crosstrain::testing::scratch_dir("launch_torch");
  const auto script = dir / "all_reduce.py";
  std::ofstream(script) << R"(import os, sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(t)
attempt = os.environ["TORCHELASTIC_RESTART_COUNT"]
print("attempt", attempt, "rank", dist.get_rank(), "of", dist.get_world_size(), "sum", t.item(), flush=True)
dist.destroy_process_group()
if attempt == "0" and os.environ["RANK"] == "1":
    sys.exit(3)
)";
  auto r = run_command(launch("--nproc-per-node 2 --max-restarts 1 --master-port 0 -- " +
                              crosstrain::testing::python() + " " + script.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "[rank1]: attempt 1 rank 1 of 2 sum 3.0\n"), 1u) << r.output;
  EXPECT_EQ(count_of(r.output, "[rank0]: attempt 1 rank 0 of 2 sum 3.0\n"), 1u) << r.output;
  EXPECT_NE(r.output.find("rank 1 (local rank 1) failed: exit code 3; restarting"), std::string::npos) << r.output;
}

// An elastic launch hands over to the real torchrun (.venv's): the worker's flags reach the worker,
// also those torchrun's own parser takes (`--log`, an abbreviation of its --log-dir; `--nnodes`).
TEST(LaunchTorch, TorchrunPassesTheWorkersFlagsToTheWorker) {
  const fs::path torchrun = fs::path(crosstrain::testing::python()).parent_path() / "torchrun";
  if (!fs::exists(torchrun)) GTEST_SKIP() << "no torchrun next to " << crosstrain::testing::python();
  const std::string worker = "-- /bin/sh -c 'echo \"worker $RANK of $WORLD_SIZE: $*\"' sh --log run.jsonl --nnodes 3 -- x";
  // (--nnodes MIN:MAX takes the same way to torchrun.)
  auto r = run_command("PATH=" + torchrun.parent_path().string() + ":/usr/bin:/bin " +
                       launch("--rdzv-backend c10d --nnodes 1 --nproc-per-node 2 --rdzv-endpoint 127.0.0.1:" +
                              std::to_string(free_port()) + " " + worker));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const std::string rank : {"0", "1"})
    EXPECT_EQ(count_of(r.output, "worker " + rank + " of 2: --log run.jsonl --nnodes 3 -- x\n"), 1u) << r.output;
}

#ifdef CROSSTRAIN_CLI_WITH_TORCH
// A libtorch command as the worker: the front hands each worker over to the engine.
TEST(LaunchTorch, EngineCommandsRunAsWorkers) {
  auto r = run_command(launch("--nproc-per-node 2 -- models"), false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::regex resnet18(R"(\[rank(\d)\]: +resnet18 )");
  std::set<std::string> ranks;
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), resnet18); it != std::sregex_iterator(); ++it)
    ranks.insert((*it)[1]);
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1"})) << r.output;
}
#endif
