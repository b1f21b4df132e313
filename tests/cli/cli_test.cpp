#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "test_support.h"

using crosstrain::testing::binary;
using crosstrain::testing::run_command;

namespace {
size_t line_count(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}
#ifdef CROSSTRAIN_CLI_WITH_TORCH
const char* kTiny = " --device cpu --model resnet18 --small-stem --num-classes 10 --image-size 16 --batch-size 2"
                    " --steps 2 --warmup-steps 1 --threads 1";
#endif
}  // namespace

TEST(Cli, HelpAndUnknownCommand) {
  auto r = run_command(binary() + " --help");
  EXPECT_EQ(r.exit_code, 0);
  auto bad = run_command(binary() + " frobnicate");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(line_count(bad.output), 1u) << bad.output;
  EXPECT_EQ(bad.output.rfind("crosstrain: error:", 0), 0u);
}

// A mistyped command or flag is named with the names of a similar spelling, on one line (CLI11
// alone said "The following arguments were not expected: bf16 --precision").
TEST(Cli, UnknownFlagNamesTheSimilarFlags) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bench --precision bf16", "unknown flag --precision; did you mean --precisions?"},
      {"train --precisions bf16", "unknown flag --precisions; did you mean --precision?"},
      {"train --batchsize 4", "unknown flag --batchsize; did you mean --batch-size?"},
      {"train --warmup 2", "unknown flag --warmup; did you mean --warmup-steps?"},
      {"comm-bench --max-byte=1M", "unknown flag --max-byte; did you mean --max-bytes?"},
      {"doctor --dist-timout 3", "unknown flag --dist-timout; did you mean --dist-timeout?"},
      {"analyze trace.json --jsno out.json", "unknown flag --jsno; did you mean --json?"},
      {"train --frobnicate 1", "unknown flag --frobnicate (see crosstrain train --help)"},
      {"train -x 1", "unknown flag -x (see crosstrain train --help)"},
      {"train --checkpoint ck", "unknown flag --checkpoint; did you mean --checkpoint-dir, --checkpoint-every, "
                                "--checkpoint-every-epochs or --checkpoint-keep?"},
      {"train --stepz 3 --batchsize 4", "unknown flag --stepz; did you mean --steps?; unknown flag --batchsize; "
                                        "did you mean --batch-size?"},
      // Flags in a command's option groups (run's dump and profiling flags) are among the hints.
      {"run --dump-step 0 -- python3 train.py", "unknown flag --dump-step; did you mean --dump-steps?"},
      {"run --profile-activ 2 -- python3 train.py", "unknown flag --profile-activ; did you mean --profile-active?"},
      {"align --a-envs X=1 -- python3 train.py", "unknown flag --a-envs; did you mean --a-env?"},
      {"models extra", "unexpected argument: extra (see crosstrain models --help)"},
      {"benhc", "unknown command 'benhc'; did you mean bench?"},
  };
  for (const auto& [args, expected] : cases) {
    auto r = run_command(binary() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_EQ(line_count(r.output), 1u) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("crosstrain: error: ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << args << "\n" << r.output;
  }
  for (const std::string far : {"train --frobnicate 1", "train -x 1", "bench --colour blue"}) {
    auto r = run_command(binary() + " " + far);  // nothing near: the flag is named, nothing guessed
    EXPECT_EQ(r.output.find("did you mean"), std::string::npos) << far << "\n" << r.output;
  }
}

// The front answers --help of every command, with or without libtorch in the build.
TEST(Cli, EveryCommandHasHelp) {
  for (const char* cmd : {"train", "bench", "doctor", "models"}) {
    auto r = run_command(binary() + " " + cmd + " --help");
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.output.find("--json"), std::string::npos) << cmd;
  }
}

#ifdef CROSSTRAIN_CLI_WITH_TORCH
TEST(Cli, BadFlagsAndValuesExitTwoWithOneLine) {
  for (const std::string args : {"train --no-such-flag", "train --precision fp8", "train --batch-size 0",
                                 "train --device tpu", "bench --precisions fp32,int4", "train --steps 3 --warmup-steps 3",
                                 "train --device cpu --precision tf32", "train --loss-scale -3"}) {
    auto r = run_command(binary() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_EQ(line_count(r.output), 1u) << args << "\n" << r.output;
  }
}

TEST(Cli, MissingWeightsFileIsARuntimeErrorNamingIt) {
  auto r = run_command(binary() + " train" + kTiny + " --weights /nonexistent/w.pt");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("/nonexistent/w.pt"), std::string::npos) << r.output;
}

TEST(Cli, ModelsJson) {
  auto r = run_command(binary() + " models --json -", /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0);
  auto j = nlohmann::json::parse(r.output);  // stdout holds only JSON
  ASSERT_EQ(j["models"].size(), 5u);
  EXPECT_EQ(j["models"][2]["name"], "resnet50");
  EXPECT_EQ(j["models"][2]["parameters"], 25557032);
  EXPECT_NEAR(j["models"][2]["forward_gflops"].get<double>(), 8.18, 0.01);
}

TEST(Cli, TrainJsonAndSummary) {
  auto dir = crosstrain::testing::scratch_dir("cli_train");
  const std::string json = (dir / "r.json").string();
  auto r = run_command(binary() + " train" + kTiny + " --precision bf16 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("throughput"), std::string::npos);
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["kind"], "train");
  EXPECT_EQ(j["precision"], "bf16");
  EXPECT_EQ(j["step_log"].size(), 2u);
}

TEST(Cli, BenchJsonHasPerRunKeys) {
  auto r = run_command(binary() + " bench" + kTiny + " --precisions fp32,bf16 --json -", /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["runs"].size(), 2u);
  for (const auto& run : j["runs"])
    for (const char* key : {"precision", "throughput_img_s", "batch_time_ms_median", "peak_memory_bytes", "first_step_ms"})
      EXPECT_TRUE(run.contains(key)) << key;
  EXPECT_EQ(j["runs"][1]["precision"], "bf16");
}

// A command's default timing warm-up is lowered to fit a short run, and said, on every command
// with steps and a warm-up: bench's default of 2 (CPU) used to refuse --steps 2 as train's 3
// once refused --steps 3. A warm-up the user gave that leaves no timed step stays an error.
TEST(Cli, DefaultWarmupIsLoweredToFitShortRunsAndSaid) {
  const std::string model = " --device cpu --model resnet18 --small-stem --num-classes 10 --image-size 16"
                            " --batch-size 2 --threads 1 --no-progress";
  struct Case {
    std::string args;
    int64_t steps, warmup;
    std::string note;
  };
  for (const Case& c : {Case{"bench --precisions fp32 --steps 2", 2, 1, "timing warm-up lowered from 2 to 1 steps to fit 2 steps"},
                        Case{"bench --precisions fp32 --steps 1", 1, 0, "timing warm-up lowered from 2 to 0 steps to fit 1 steps"},
                        Case{"train --steps 2", 2, 1, "timing warm-up lowered from 3 to 1 steps to fit 2 steps"}}) {
    SCOPED_TRACE(c.args);
    const bool bench = c.args.rfind("bench", 0) == 0;
    auto r = run_command(binary() + " " + c.args + model + " --json -", /*merge_stderr=*/false);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(r.output);
    const auto& run = bench ? j["runs"][0] : j;
    EXPECT_EQ(run["step_log"].size(), static_cast<size_t>(c.steps));
    EXPECT_EQ(run["warmup_steps"], c.warmup);
    ASSERT_TRUE(run["notes"].is_array()) << r.output;
    EXPECT_NE(std::find(run["notes"].begin(), run["notes"].end(), c.note), run["notes"].end()) << run["notes"].dump();
    // The note reaches the terminal too.
    auto console = run_command(binary() + " " + c.args + model);
    EXPECT_NE(console.output.find("note: " + c.note), std::string::npos) << console.output;
  }
  for (const char* refused : {"bench --precisions fp32 --steps 2 --warmup-steps 2", "train --steps 2 --warmup-steps 2"}) {
    auto r = run_command(binary() + " " + refused + model);
    EXPECT_EQ(r.exit_code, 2) << refused << "\n" << r.output;
    EXPECT_NE(r.output.find("--warmup-steps must be less than --steps (2)"), std::string::npos) << r.output;
  }
}

// The profiler's own warm-up is fitted the same way: a run shorter than its default schedule
// (wait 1, warm-up 1) used to write no trace and say nothing. Now one step is recorded, and said.
TEST(Cli, ProfileScheduleIsLoweredSoShortRunsRecordATrace) {
  const std::string model = " --device cpu --model resnet18 --small-stem --num-classes 10 --image-size 16"
                            " --batch-size 2 --threads 1 --no-progress";
  struct Case {
    std::string flags, note;
  };
  for (const Case& c :
       {Case{" --steps 1", "profiler schedule lowered from wait 1, warm-up 1 to wait 0, warm-up 0 steps so that 1 steps"},
        Case{" --steps 2", "profiler schedule lowered from wait 1, warm-up 1 to wait 1, warm-up 0 steps so that 2 steps"}}) {
    SCOPED_TRACE(c.flags);
    const auto dir = crosstrain::testing::scratch_dir("cli_profile_fit");
    auto r = run_command(binary() + " train" + model + c.flags + " --profile " + (dir / "prof").string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("note: " + c.note), std::string::npos) << r.output;
    std::ifstream trace(dir / "prof" / "cycle0" / "rank0.pt.trace.json");
    ASSERT_TRUE(trace.good()) << r.output;
    const auto j = nlohmann::json::parse(trace);
    bool recorded_a_step = false;
    for (const auto& e : j["traceEvents"])
      if (e.value("name", "").rfind("ProfilerStep#", 0) == 0) recorded_a_step = true;
    EXPECT_TRUE(recorded_a_step) << "no ProfilerStep span in the trace";
  }
  // A schedule the user set that leaves nothing to record is refused, as --warmup-steps is.
  auto r = run_command(binary() + " train" + model + " --steps 3 --profile-wait 2 --profile-warmup 4 --profile " +
                       (crosstrain::testing::scratch_dir("cli_profile_fit") / "prof").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--profile-wait 2 and --profile-warmup 4 leave no step of 3 to record"), std::string::npos)
      << r.output;
}

TEST(Cli, DoctorReportsAndFailsOnAMissingDevice) {
  auto ok = run_command(binary() + " doctor --json -", false);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  auto j = nlohmann::json::parse(ok.output);
  EXPECT_TRUE(j["ok"].get<bool>());
  std::set<std::string> names;
  for (const auto& c : j["checks"]) names.insert(c["name"].get<std::string>());
  for (const char* n : {"libtorch", "BLAS", "oneDNN (MKLDNN)", "intra-op threads", "device cpu"})
    EXPECT_TRUE(names.count(n)) << n;
  auto bad = run_command(binary() + " doctor --python '' --device cuda:3");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("FAILED"), std::string::npos);
  auto lib = run_command(binary() + " doctor --python '' --backend-lib /nonexistent/libtorch_npu.so");
  EXPECT_EQ(lib.exit_code, 1);
  EXPECT_NE(lib.output.find("/nonexistent/libtorch_npu.so"), std::string::npos);
}
#endif

#ifdef CROSSTRAIN_CLI_WITH_TORCH
TEST(Cli, BackendLibRegistersItsDeviceName) {
  const std::string lib = FAKE_BACKEND_LIB;
  auto doc = run_command(binary() + " doctor --python '' --json - --backend-lib " + lib, false);
  ASSERT_EQ(doc.exit_code, 0) << doc.output;
  auto j = nlohmann::json::parse(doc.output);
  bool found = false;
  for (const auto& c : j["checks"])
    if (c["name"] == "PrivateUse1 backend") found = c["value"] == "fakenpu";
  EXPECT_TRUE(found) << doc.output;
  // The same command line with and without the library. Without it the name is unknown: a usage
  // error naming it ...
  const std::string run = " train --device fakenpu:0 --model resnet18 --small-stem --num-classes 10 --image-size 16"
                          " --batch-size 2 --steps 2 --warmup-steps 1 --threads 1 --no-progress";
  auto unknown = run_command(binary() + run);
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("unknown device 'fakenpu:0'"), std::string::npos) << unknown.output;
  // ... with it the name is libtorch's device type: the run gets as far as putting the model on
  // that device, where this stand-in without kernels fails at run time (exit 1), in libtorch's
  // words about the registered backend.
  auto known = run_command(binary() + " train --backend-lib " + lib + run.substr(std::string(" train").size()));
  EXPECT_EQ(known.exit_code, 1) << known.output;
  EXPECT_NE(known.output.find("crosstrain: error: PyTorch is not linked with support for fakenpu devices"),
            std::string::npos)
      << known.output;
  EXPECT_EQ(known.output.find("unknown device"), std::string::npos) << known.output;
}

// libtorch's errors carry a C++ backtrace; the user sees the message, on one line.
TEST(Cli, LibtorchErrorsAreOneLineWithoutBacktrace) {
  const std::string lib = FAKE_BACKEND_LIB;
  auto r = run_command(binary() + " train --backend-lib " + lib +
                       " --device fakenpu:0 --model resnet18 --small-stem --num-classes 10 --image-size 16"
                       " --batch-size 2 --steps 2 --warmup-steps 1 --threads 1 --no-progress");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.find("frame #"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Exception raised from"), std::string::npos) << r.output;
  const auto error = r.output.find("crosstrain: error: ");
  ASSERT_NE(error, std::string::npos) << r.output;
  EXPECT_EQ(line_count(r.output.substr(error)), 1u) << r.output;
}

// More intra-op threads than the machine has only makes OpenMP's workers spin against each other
// (10000 threads never finished a step): refused before anything runs, on every command taking them.
TEST(Cli, ThreadsBeyondTheMachineAreRefused) {
  const unsigned hardware = std::thread::hardware_concurrency();
  if (hardware == 0 || hardware >= 1024) GTEST_SKIP() << "no thread count between the machine's and the flag's limit";
  const std::string n = std::to_string(hardware + 1);
  const std::string model = " --device cpu --model resnet18 --small-stem --num-classes 10 --image-size 16 --batch-size 2";
  for (const std::string& args : {"train" + model + " --steps 1 --threads " + n,
                                  "bench" + model + " --steps 3 --threads " + n,
                                  "align --a device=cpu --b 'device=cpu threads=" + n + "'" + model + " --steps 1"}) {
    auto r = run_command("timeout 120 " + binary() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("is more than the " + std::to_string(hardware) + " hardware threads"), std::string::npos)
        << args << "\n" << r.output;
  }
}

// A model whose weights, gradients and optimizer state alone exceed the machine's memory is refused
// before it is built (it would grow until the kernel killed it).
TEST(Cli, ModelLargerThanMemoryIsRefusedBeforeItIsBuilt) {
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  if (memory > 500e9) GTEST_SKIP() << "a machine with more than 500 GB holds the model";
  auto r = run_command("/usr/bin/time -f 'maxrss %M' timeout 120 " + binary() +
                       " train --device cpu --model resnet152 --base-width 1024 --num-classes 1000000 --steps 1"
                       " --threads 1 --no-progress");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("GB of memory of this machine"), std::string::npos) << r.output;
  const auto at = r.output.rfind("maxrss ");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_LT(std::stol(r.output.substr(at + 7)), 2L * 1024 * 1024) << "KiB";
}

// A model of a million classes is counted, not allocated (its classifier alone is 8 GB).
TEST(Cli, ModelsCountsLargeClassifiersWithoutAllocatingThem) {
  auto r = run_command("/usr/bin/time -f 'maxrss %M' " + binary() + " models --num-classes 1000000 --json -");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"parameters\": 2072508032"), std::string::npos) << r.output;  // resnet50: + 2049 x 999000
  const auto at = r.output.rfind("maxrss ");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_LT(std::stol(r.output.substr(at + 7)), 2L * 1024 * 1024) << "KiB";
}
#endif

#ifdef CROSSTRAIN_CLI_WITH_TORCH
TEST(Cli, UnwritableOutputsFailBeforeTraining) {
  // A typo in --json, --save-weights or --log is reported at once, not after the run.
  for (const char* flag : {"--json", "--save-weights", "--log"}) {
    auto r = run_command(binary() + " train --model resnet18 --small-stem --num-classes 10 --image-size 16" +
                         " --batch-size 2 --steps 1 --threads 1 " + flag + " /nonexistent_dir_for_test/out");
    EXPECT_EQ(r.exit_code, 1) << flag << ": " << r.output;
    EXPECT_NE(r.output.find("/nonexistent_dir_for_test"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("throughput"), std::string::npos) << flag << " trained anyway: " << r.output;
  }
}
#endif

#ifdef CROSSTRAIN_CLI_WITH_TORCH
TEST(Cli, StdLibrarySymbolsBindToLibstdcxxNotLibtorch) {
  // libtorch.so exports copies of std::filesystem functions that crash when called from here; the
  // engine must list libstdc++ before libtorch so that every std:: symbol binds to libstdc++.
  const std::string engine = std::filesystem::path(binary()).parent_path() / "crosstrain-engine";
  auto r = run_command("readelf -d " + engine + " | grep NEEDED", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto stdcxx = r.output.find("libstdc++"), torch = r.output.find("libtorch");
  ASSERT_NE(stdcxx, std::string::npos) << r.output;
  ASSERT_NE(torch, std::string::npos) << r.output;
  EXPECT_LT(stdcxx, torch) << r.output;
  // And what crashed before: replacing a dump (std::filesystem::remove_all) in the engine.
  const auto dir = crosstrain::testing::scratch_dir("dump_overwrite");
  const std::string train = binary() + " train --model resnet18 --small-stem --base-width 8 --num-classes 10" +
                            " --image-size 16 --batch-size 2 --steps 1 --threads 1 --dump " + (dir / "d").string();
  r = run_command(train + " > /dev/null 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(train + " --dump-overwrite");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::filesystem::remove_all(dir);
}
#endif
