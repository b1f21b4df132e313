// `crosstrain run` on the frameworks users train with and on the processes real commands start:
// accelerate with gradient accumulation dumped twice with the same seed agrees, a factor of 1.001
// planted in one line is the first divergence at that line; a command of two Python processes, two
// runs into one folder, folders that cannot be written, a #!/usr/bin/env python3 script, and the
// summary after --stop-on-nonfinite's own stop.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "test_support.h"

namespace fs = std::filesystem;
using crosstrain::testing::binary;
using crosstrain::testing::python;
using crosstrain::testing::read_bytes;
using crosstrain::testing::run_command;
using crosstrain::testing::scratch_dir;
using crosstrain::testing::source_dir;

namespace {

std::string script(const std::string& name) { return source_dir() + "/tests/python/run_scripts/" + name; }

crosstrain::testing::CommandResult in_dir(const fs::path& dir, const std::string& command) {
  return run_command("cd " + dir.string() + " && " + command);
}

const char* kMlp =
    "import torch\n"
    "torch.manual_seed(0)\n"
    "m = torch.nn.Linear(4, 2); opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
    "for _ in range(2):\n"
    "    m(torch.randn(3, 4)).sum().backward(); opt.step(); opt.zero_grad()\n";

}  // namespace

TEST(RunFrameworks, AccelerateAgreesWithItselfAndAPlantedFactorIsTheFirstDivergenceAtItsLine) {
  const auto dir = scratch_dir("run_accelerate");
  const std::string run = binary() + " run --seed 0 --dump-level both --dump-steps 0-1 ";
  const std::string prog = " -- " + python() + " " + script("train_accelerate.py");
  for (const auto& [dump, args] : {std::pair<std::string, std::string>{"a", ""}, {"a2", ""}, {"b", " --plant-factor 1.001"}}) {
    auto r = in_dir(dir, run + "--dump " + dump + prog + args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("3 steps; dump"), std::string::npos) << r.output;
  }
  auto same = run_command(binary() + " compare " + (dir / "a").string() + " " + (dir / "a2").string());
  EXPECT_EQ(same.exit_code, 0) << same.output;
  auto changed = run_command(binary() + " compare " + (dir / "a").string() + " " + (dir / "b").string() + " --json -",
                             /*merge_stderr=*/false);
  EXPECT_EQ(changed.exit_code, 1) << changed.output;
  const auto j = nlohmann::json::parse(changed.output);
  const auto& first = j["first_divergence"];
  EXPECT_EQ(first["step"], 0) << first.dump();
  EXPECT_EQ(first["name"], "op_forward/Denoiser/aten.mul#1") << first.dump();
  EXPECT_NE(first.dump().find("train_accelerate.py:34"), std::string::npos) << first.dump();
}

TEST(RunFrameworks, AnAccelerateStepReplaysOnTheCpu) {
  const auto dir = scratch_dir("run_accelerate_replay");
  auto r = in_dir(dir, binary() + " run --seed 0 --dump t --dump-level op --dump-mode tensors -- " + python() + " " +
                           script("train_accelerate.py") + " --steps 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto replay = run_command(binary() + " op-check --from-dump " + (dir / "t").string() + " --json -", false);
  EXPECT_EQ(replay.exit_code, 0) << replay.output;
  const auto j = nlohmann::json::parse(replay.output);
  EXPECT_GT(j["replayed"].get<int>(), 40) << replay.output.substr(0, 2000);
  EXPECT_EQ(j["failed"].get<int>(), 0);
}

TEST(RunFrameworks, EachPythonProcessOfACommandHasItsOwnFolderAndTheSummaryNamesBoth) {
  const auto dir = scratch_dir("run_two_processes");
  std::ofstream(dir / "train.py") << kMlp;
  auto r = in_dir(dir, binary() + " run --dump d -- bash -c '" + python() + " train.py && " + python() + " train.py'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "d" / "index.jsonl"));
  int own = 0;
  for (const auto& e : fs::directory_iterator(dir / "d"))
    if (e.path().filename().string().rfind("pid", 0) == 0 && fs::exists(e.path() / "index.jsonl")) ++own;
  EXPECT_EQ(own, 1) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n') >= 2, true);
  EXPECT_NE(r.output.find("/pid"), std::string::npos) << r.output;
}

TEST(RunFrameworks, ASecondRunIntoTheSameFolderIsRefusedBeforeItStarts) {
  const auto dir = scratch_dir("run_concurrent");
  std::ofstream(dir / "slow.py") << "import time, torch\ntime.sleep(8)\n";
  std::thread first([&] { in_dir(dir, binary() + " run --dump d -- " + python() + " slow.py"); });
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::ofstream(dir / "train.py") << kMlp << "print('trained')\n";
  auto second = in_dir(dir, binary() + " run --dump d -- " + python() + " train.py");
  first.join();
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_EQ(second.output.find("trained"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("another crosstrain run"), std::string::npos) << second.output;
  EXPECT_EQ(std::count(second.output.begin(), second.output.end(), '\n'), 1) << second.output;
}

TEST(RunFrameworks, AFolderThatCannotBeWrittenIsOneLineAndExitTwo) {
  const auto dir = scratch_dir("run_unwritable");
  fs::create_symlink(dir / "nowhere", dir / "dangling");
  std::ofstream(dir / "file") << "x";
  for (const std::string target : {"dangling", "file/sub", "/proc/crosstrain-dump"}) {
    for (const std::string flag : {"--dump", "--profile"}) {
      auto r = in_dir(dir, binary() + " run " + flag + " " + target + " -- " + python() + " -c 'print(\"ran\")'");
      EXPECT_EQ(r.exit_code, 2) << flag << " " << target << "\n" << r.output;
      EXPECT_EQ(r.output.find("ran"), std::string::npos) << r.output;
      EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << flag << " " << target << "\n" << r.output;
    }
  }
  auto r = in_dir(dir, binary() + " run --dump dangling -- true");
  EXPECT_NE(r.output.find("does not exist"), std::string::npos) << r.output;
}

TEST(RunFrameworks, AnEnvPythonScriptIsPythonAndAStopIsNoStepMarkerHint) {
  const auto dir = scratch_dir("run_shebang");
  std::ofstream(dir / "train.py") << "#!/usr/bin/env python3\n" << kMlp;
  fs::permissions(dir / "train.py", fs::perms::owner_all);
  auto r = in_dir(dir, "PATH=" + fs::path(python()).parent_path().string() + ":$PATH " + binary() +
                           " run --dump d -- ./train.py");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("without the agent"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 steps; dump"), std::string::npos) << r.output;
  std::ofstream(dir / "nan.py") << "import torch\nx = torch.ones(2, requires_grad=True)\n"
                                   "torch.log(x - 2).sum().backward()\n";
  r = in_dir(dir, binary() + " run --stop-on-nonfinite -- " + python() + " nan.py");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("first non-finite tensor"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("--step-marker"), std::string::npos) << r.output;
}
