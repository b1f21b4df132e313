// Checkpoints through the binary: exact resume after a crash (bit for bit, on synthetic data, on
// Fashion-MNIST and on an ImageFolder of JPEGs with random crops and flips read by 2 workers, with the
// crash inside an epoch; with 4 data-parallel ranks), fallback past corrupt and inconsistent
// checkpoints, pruning that never lets a bad file push a good one out, one trainer per directory,
// refusal of changed settings, kill -9 during writes, SIGTERM preemption, and both directions with
// Python's torch.load / torch.save.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "test_support.h"
#include "worker_processes.h"

namespace ct = crosstrain::testing;
namespace fs = std::filesystem;

namespace {

const std::string kTiny =
    " --model resnet18 --small-stem --base-width 8 --num-classes 10 --image-size 16 --batch-size 8 --threads 1"
    " --lr 0.05 --schedule cosine --seed 5";

std::vector<double> losses_of(const fs::path& log) {
  std::ifstream in(log);
  std::vector<double> out;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(nlohmann::json::parse(l).at("loss").get<double>());
  return out;
}

// Runs a command with its stdout discarded and its stderr captured.
ct::CommandResult run_quiet(const std::string& cmd) { return ct::run_command("(" + cmd + " > /dev/null)"); }

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A straight run of `steps`, and the same run crashing after step `crash` (checkpoints every
// `every` steps) then resumed with --resume auto: equal losses and equal final weights.
void expect_exact_resume(const std::string& name, const std::string& flags, int steps, int every, int crash,
                         const std::string& env = "") {
  const auto dir = ct::scratch_dir("ckpt_" + name);
  const std::string base = env + ct::binary() + " train" + flags + " --steps " + std::to_string(steps) + " --no-final-eval";
  auto r = run_quiet(base + " --log " + (dir / "a.jsonl").string() + " --save-weights " +
                           (dir / "a.pt").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string ck = " --checkpoint-dir " + (dir / "ck").string() + " --checkpoint-every " + std::to_string(every);
  r = run_quiet(base + ck + " --crash-after-step " + std::to_string(crash) + " --log " +
                      (dir / "b1.jsonl").string());
  ASSERT_EQ(r.exit_code, 137) << r.output;
  r = ct::run_command(base + ck + " --resume auto --log " + (dir / "b2.jsonl").string() + " --save-weights " +
                      (dir / "b.pt").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const int saved = (crash + 1) / every * every;  // the newest checkpoint before the crash
  EXPECT_NE(r.output.find("resumed from"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at step " + std::to_string(saved)), std::string::npos) << r.output;
  auto b = losses_of(dir / "b1.jsonl");
  b.resize(static_cast<size_t>(saved));
  const auto b2 = losses_of(dir / "b2.jsonl");
  b.insert(b.end(), b2.begin(), b2.end());
  EXPECT_EQ(b, losses_of(dir / "a.jsonl")) << name;
  EXPECT_TRUE(file_bytes(dir / "a.pt") == file_bytes(dir / "b.pt")) << name << ": final weights differ";
  fs::remove_all(dir);
}

bool have_fashion_mnist() { return fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"); }

}  // namespace

TEST(Checkpoint, ExactResumeSyntheticFp32) { expect_exact_resume("fp32", kTiny, 7, 2, 4); }
TEST(Checkpoint, ExactResumeWhenTheWriterCopiesParametersLate) {
  // The writer copies parameters and optimizer state while the next step runs; delayed by 400 ms,
  // the copy would see the next optimizer step's values unless that step waits for it.
  expect_exact_resume("late_copy", kTiny, 7, 2, 4, "CROSSTRAIN_TEST_CHECKPOINT_COPY_DELAY_MS=400 ");
}
TEST(Checkpoint, ExactResumeSyntheticBf16) { expect_exact_resume("bf16", kTiny + " --precision bf16", 6, 2, 3); }
TEST(Checkpoint, ExactResumeFp16WithDynamicScalerAfterASkippedStep) {
  // Step 1 overflows (injected) and is skipped; the scaler's state crosses the crash.
  expect_exact_resume("fp16", kTiny + " --precision fp16 --inject-inf-at-step 1 --scale-growth-interval 2", 6, 3, 4);
}

TEST(Checkpoint, ExactResumeOnFashionMnistMidEpoch) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "Fashion-MNIST (dataset-fashion-mnist) is not installed";
  // 96 samples / batch 8 = 12 batches per epoch: the crash after step 16 falls inside epoch 1.
  expect_exact_resume("fmnist",
                      " --data idx:/usr/share/datasets/fashion-mnist --max-samples 96 --workers 2 --model resnet18"
                      " --small-stem --base-width 8 --batch-size 8 --threads 1 --lr 0.05 --seed 2",
                      20, 5, 16);
}

TEST(Checkpoint, ExactResumeOnAugmentedJpegsWithTwoWorkers) {
  const auto dir = ct::scratch_dir("ckpt_jpeg_data");
  auto r = run_quiet(ct::binary() + " make-imagefolder --out " + (dir / "imgs").string() +
                           " --train 64 --val 16 --classes 4 --size 40x32 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_exact_resume("jpeg",
                      " --data imagefolder:" + (dir / "imgs").string() +
                          " --image-size 24 --min-crop-scale 0.3 --workers 2 --model resnet18 --small-stem --base-width 8"
                          " --batch-size 8 --threads 1 --lr 0.05 --seed 4",
                      12, 3, 7);  // 8 batches per epoch: crash in epoch 0, resume at step 6
  fs::remove_all(dir);
}

TEST(Checkpoint, CorruptNewestFallsBackAndANamedCorruptFileIsAnError) {
  const auto dir = ct::scratch_dir("ckpt_corrupt");
  const std::string ck = " --checkpoint-dir " + (dir / "ck").string() + " --checkpoint-every 2 --checkpoint-keep 5";
  auto r = run_quiet(ct::binary() + " train" + kTiny + " --steps 4" + ck);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto newest = dir / "ck" / "checkpoint_000000004.pt";
  ASSERT_TRUE(fs::exists(newest));
  fs::resize_file(newest, fs::file_size(newest) / 2);
  r = run_quiet(ct::binary() + " train" + kTiny + " --steps 5" + ck + " --resume auto");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("skipping checkpoint " + newest.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at step 2"), std::string::npos) << r.output;
  fs::resize_file(newest, fs::file_size(newest) / 2);
  r = run_quiet(ct::binary() + " train" + kTiny + " --steps 5 --resume " + newest.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(newest.string()), std::string::npos) << r.output;
  fs::remove_all(dir);
}

TEST(Checkpoint, ResumeWithChangedSettingsIsRefusedNamingThem) {
  const auto dir = ct::scratch_dir("ckpt_fingerprint");
  const std::string ck = " --checkpoint-dir " + (dir / "ck").string();
  auto r = run_quiet(ct::binary() + " train" + kTiny + " --steps 2" + ck);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_quiet(ct::binary() + " train" + kTiny + " --steps 4 --momentum 0.8" + ck + " --resume auto");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--momentum 0.9"), std::string::npos) << r.output;
  // The step count, logging and checkpoint cadence may change.
  r = run_quiet(ct::binary() + " train" + kTiny + " --steps 4 --checkpoint-every 1" + ck + " --resume auto --log " +
                      (dir / "l.jsonl").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(losses_of(dir / "l.jsonl").size(), 2u);
  fs::remove_all(dir);
}

TEST(Checkpoint, KillDuringWritesAlwaysLeavesLoadableCheckpoints) {
  const auto dir = ct::scratch_dir("ckpt_kill");
  std::mt19937 rng(7);
  const std::string cmd = ct::binary() + " train" + kTiny + " --checkpoint-every 1 --checkpoint-keep 2" +
                          " --checkpoint-dir " + (dir / "ck").string() + " --resume auto";
  for (int round = 0; round < 6; ++round) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", ("exec " + cmd + " --steps 400 > /dev/null 2>&1").c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500 + rng() % 1500));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
  }
  // Every checkpoint left behind opens in Python (temporary files are not checkpoints).
  const std::string check = ct::python() + " -c \"import glob,sys,torch; fs=sorted(glob.glob('" + (dir / "ck").string() +
                            "/checkpoint_*.pt')); [torch.load(f, weights_only=True) for f in fs]; print(len(fs))\"";
  auto r = ct::run_command(check);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GE(std::stoi(r.output), 1) << r.output;
  r = run_quiet(cmd + " --steps 2");  // resumes past step 2: nothing left to train
  EXPECT_EQ(r.exit_code, 0) << r.output;
  fs::remove_all(dir);
}

TEST(Checkpoint, SigtermFinishesTheStepWritesACheckpointAndExits143) {
  const auto dir = ct::scratch_dir("ckpt_sigterm");
  const std::string log = (dir / "l.jsonl").string();
  const std::string cmd = ct::binary() + " train" + kTiny + " --steps 100000 --checkpoint-dir " +
                          (dir / "ck").string() + " --log " + log;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + cmd + " > /dev/null 2>&1").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 600 && losses_of(log).size() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 143);
  EXPECT_LT(waited, 30.0);
  const auto done = losses_of(log).size();
  EXPECT_TRUE(fs::exists(dir / "ck" / ("checkpoint_" + std::string(9 - std::to_string(done).size(), '0') +
                                       std::to_string(done) + ".pt")))
      << done;
  fs::remove_all(dir);
}

TEST(Checkpoint, PythonReadsItWithTorchvisionAndTorchOptim) {
  const auto dir = ct::scratch_dir("ckpt_python_reads");
  auto r = run_quiet(ct::binary() + " train --model resnet18 --num-classes 10 --image-size 32 --batch-size 2" +
                           " --steps 2 --threads 1 --precision fp16 --loss-scale 1 --checkpoint-dir " + (dir / "ck").string() +
                           "");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = ct::run_command(ct::python() + " " + ct::source_dir() + "/tests/python/checkpoint_interop.py read " +
                      (dir / "ck" / "checkpoint_000000002.pt").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  fs::remove_all(dir);
}

TEST(Checkpoint, ResumesFromATorchvisionReferenceStyleCheckpoint) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "Fashion-MNIST (dataset-fashion-mnist) is not installed";
  const auto dir = ct::scratch_dir("ckpt_python_writes");
  const auto ckpt = (dir / "model_0.pth").string(), weights = (dir / "w.pt").string();
  auto r = ct::run_command(ct::python() + " " + ct::source_dir() + "/tests/python/checkpoint_interop.py write " + ckpt +
                           " " + weights);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // 64 samples / batch 16 = 4 batches per epoch; the script finished epoch 0, so the run resumes at
  // step 4 and, with --steps 4, trains no further: the saved weights are the script's.
  r = ct::run_command(ct::binary() + " train --data idx:/usr/share/datasets/fashion-mnist --max-samples 64" +
                      " --batch-size 16 --model resnet18 --num-classes 10 --threads 1 --steps 4 --no-final-eval" +
                      " --resume " + ckpt + " --save-weights " + (dir / "out.pt").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("at step 4"), std::string::npos) << r.output;
  r = ct::run_command(ct::python() + " " + ct::source_dir() + "/tests/python/checkpoint_interop.py same " + weights +
                      " " + (dir / "out.pt").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // And it trains on from there.
  r = run_quiet(ct::binary() + " train --data idx:/usr/share/datasets/fashion-mnist --max-samples 64" +
                      " --batch-size 16 --model resnet18 --num-classes 10 --threads 1 --steps 6 --no-final-eval" +
                      " --resume " + ckpt);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  fs::remove_all(dir);
}

TEST(Checkpoint, AFullDiskFailsTheWriteClearlyAndKeepsThePreviousCheckpoint) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  const auto dir = ct::scratch_dir("ckpt_full_disk");
  const auto disk = dir / "disk";
  fs::create_directories(disk);
  if (ct::run_command("mount -t tmpfs -o size=6m tmpfs " + disk.string()).exit_code != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here";
  const std::string ck = " --checkpoint-dir " + (disk / "ck").string();
  auto r = run_quiet(ct::binary() + " train" + kTiny + " --steps 2" + ck);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ct::run_command("dd if=/dev/zero of=" + (disk / "fill").string() + " bs=64k count=1000");  // fills the disk
  r = run_quiet(ct::binary() + " train" + kTiny + " --steps 4" + ck + " --resume auto");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("checkpoint at step 4 failed"), std::string::npos) << r.output;
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(disk / "ck"))
    if (e.path().filename() != "crosstrain.lock") files += e.path().filename() == "checkpoint_000000002.pt" ? 1 : 100;
  EXPECT_EQ(files, 1u) << "a temporary file was left behind";
  r = ct::run_command(ct::python() + " -c \"import torch; torch.load('" + (disk / "ck" / "checkpoint_000000002.pt").string() +
                      "', weights_only=True)\"");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ct::run_command("umount " + disk.string());
  fs::remove_all(dir);
}

namespace {

std::string checkpoint_name(int step) {
  const std::string digits = std::to_string(step);
  return "checkpoint_" + std::string(9 - digits.size(), '0') + digits + ".pt";
}

// Every file opens with torch.load(weights_only=True).
bool opens_in_python(const std::vector<fs::path>& files) {
  std::string list;
  for (const auto& f : files) list += " " + f.string();
  return ct::run_command(ct::python() + " -c \"import sys, torch; [torch.load(f, weights_only=True) for f in sys.argv[1:]]\"" +
                         list)
             .exit_code == 0;
}

}  // namespace

// --checkpoint-keep 1 next to a file named as the newest checkpoint but cut short: the run's own
// checkpoints count and stay; the bad file neither counts nor goes. Nor does a readable checkpoint
// of another run's settings, which a run without --resume finds newer than its own.
TEST(Checkpoint, OnlyCheckpointsTheRunCouldResumeFromCountTowardKeep) {
  const auto dir = ct::scratch_dir("ckpt_keep");
  const fs::path ck = dir / "ck";
  const std::string keep1 = " --checkpoint-dir " + ck.string() + " --checkpoint-keep 1";
  auto r = run_quiet(ct::binary() + " train" + kTiny + " --steps 2" + keep1);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path cut = ck / checkpoint_name(100);  // a copy from another disk that was interrupted
  fs::copy_file(ck / checkpoint_name(2), cut);
  fs::resize_file(cut, fs::file_size(cut) / 2);
  r = run_quiet(ct::binary() + " train" + kTiny + " --steps 6 --checkpoint-every 2" + keep1 + " --resume auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("at step 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("checkpoint " + cut.string() + " is kept but not counted"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(cut));
  EXPECT_TRUE(opens_in_python({ck / checkpoint_name(6)})) << "the newest good checkpoint was deleted";
  EXPECT_FALSE(fs::exists(ck / checkpoint_name(4)));  // keep 1: older good ones go
  EXPECT_FALSE(fs::exists(ck / checkpoint_name(2)));

  // Another run's settings, no --resume: its own checkpoint at step 3 stays, and so does step 6.
  r = run_quiet(ct::binary() + " train" + kTiny + " --momentum 0.8 --steps 3" + keep1);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("checkpoint_000000006.pt is kept but not counted toward --checkpoint-keep: written with "
                          "other settings: --momentum 0.9"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(opens_in_python({ck / checkpoint_name(6), ck / checkpoint_name(3)}));
  EXPECT_TRUE(fs::exists(cut));
  fs::remove_all(dir);
}

// A checkpoint copied under a later step's name is taken for the step it holds: resume continues
// from the real newest checkpoint, and pruning never removes a newer good one for a file name.
TEST(Checkpoint, ACheckpointIsChosenByTheStepItHoldsNotItsName) {
  const auto dir = ct::scratch_dir("ckpt_renamed");
  const fs::path ck = dir / "ck";
  const std::string keep2 = " --checkpoint-dir " + ck.string() + " --checkpoint-every 2 --checkpoint-keep 2";
  auto r = run_quiet(ct::binary() + " train" + kTiny + " --steps 4" + keep2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  fs::copy_file(ck / checkpoint_name(2), ck / checkpoint_name(900));
  r = run_quiet(ct::binary() + " train" + kTiny + " --steps 6" + keep2 + " --resume auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("at step 4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(checkpoint_name(900) + " holds step 2, not the step of its name"), std::string::npos)
      << r.output;
  EXPECT_TRUE(opens_in_python({ck / checkpoint_name(6), ck / checkpoint_name(4)})) << "a newer good checkpoint went";
  EXPECT_TRUE(fs::exists(ck / checkpoint_name(900)));  // not this run's to delete
  fs::remove_all(dir);
}

// Checkpoints that read well but do not fit the trainer (an RNG state cut short, a momentum buffer
// of another shape): --resume auto passes over them, naming why, and continues exactly from the
// previous one; named with --resume PATH, one is an error of one line.
TEST(Checkpoint, AnInconsistentCheckpointIsSkippedUnderAutoAndAnErrorWhenNamed) {
  const auto dir = ct::scratch_dir("ckpt_inconsistent");
  const fs::path ck = dir / "ck";
  const std::string base = ct::binary() + " train" + kTiny + " --no-final-eval";
  const std::string cks = " --checkpoint-dir " + ck.string() + " --checkpoint-every 2 --checkpoint-keep 5";
  auto r = run_quiet(base + " --steps 8 --log " + (dir / "a.jsonl").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_quiet(base + " --steps 8" + cks + " --crash-after-step 5 --log " + (dir / "b1.jsonl").string());
  ASSERT_EQ(r.exit_code, 137) << r.output;
  for (const auto& [step, damage] : {std::pair<int, std::string>{6, "momentum-shape"}, {4, "rng-short"}}) {
    const auto p = (ck / checkpoint_name(step)).string();
    r = ct::run_python_script("checkpoint_damage.py", damage + " " + p + " " + p);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const fs::path newest = ck / checkpoint_name(6);
  r = run_quiet(base + " --steps 8 --resume " + newest.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto error_at = r.output.find("crosstrain: error: cannot resume from " + newest.string());
  ASSERT_NE(error_at, std::string::npos) << r.output;
  const std::string error_line = r.output.substr(error_at, r.output.find('\n', error_at) - error_at);
  EXPECT_NE(error_line.find("momentum_buffer"), std::string::npos) << error_line;
  EXPECT_LT(error_line.size(), 600u) << error_line;
  EXPECT_EQ(r.output.find("frame #"), std::string::npos) << r.output;

  r = run_quiet(base + " --steps 8" + cks + " --resume auto --log " + (dir / "b2.jsonl").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("skipping checkpoint " + newest.string() + ": it does not load: "), std::string::npos)
      << r.output;
  const auto rng_note = r.output.find("skipping checkpoint " + (ck / checkpoint_name(4)).string());
  ASSERT_NE(rng_note, std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rng state", rng_note), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("resumed from " + (ck / checkpoint_name(2)).string() + " at step 2"), std::string::npos)
      << r.output;
  auto b = losses_of(dir / "b1.jsonl");
  b.resize(2);
  const auto b2 = losses_of(dir / "b2.jsonl");
  b.insert(b.end(), b2.begin(), b2.end());
  EXPECT_EQ(b, losses_of(dir / "a.jsonl"));
  fs::remove_all(dir);
}

// Two trainers on one --checkpoint-dir would overwrite each other's checkpoints: the second is
// refused at once, naming the first; once the first is killed, the directory is free again.
TEST(Checkpoint, ASecondTrainerOnTheDirectoryIsRefusedNamingTheFirst) {
  const auto dir = ct::scratch_dir("ckpt_lock");
  const fs::path ck = dir / "ck", log = dir / "first.jsonl";
  const std::string ckflags = " --checkpoint-dir " + ck.string() + " --checkpoint-every 1";
  const pid_t first = fork();
  ASSERT_GE(first, 0);
  if (first == 0) {
    const std::string cmd = "exec " + ct::binary() + " train" + kTiny + " --steps 100000" + ckflags + " --log " +
                            log.string() + " > /dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 600 && losses_of(log).size() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(losses_of(log).size(), 2u);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_quiet(ct::binary() + " train" + kTiny + " --steps 4" + ckflags + " --resume auto");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_NE(r.output.find("crosstrain: error: --checkpoint-dir " + ck.string() + " is in use by another trainer (pid " +
                          std::to_string(first) + " on host " + host + ")"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("resumed from"), std::string::npos) << r.output;
  kill(first, SIGKILL);
  waitpid(first, nullptr, 0);
  r = run_quiet(ct::binary() + " train" + kTiny + " --steps 4" + ckflags + " --resume auto");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

// Four data-parallel ranks crash after step 1 and resume from the checkpoint of step 2: the same
// losses and weights as the run that never stopped, bit for bit. With more than two ranks Gloo's sum
// of a gradient depends on where it sits in its bucket, and the buckets are regrouped after the
// first step, so the checkpoint carries the grouping.
TEST(Checkpoint, FourRanksResumeBitForBitAfterACrash) {
  const auto dir = ct::scratch_dir("ckpt_four_ranks");
  const std::string args =
      "train --data synthetic:512 --model resnet18 --small-stem --base-width 8 --batch-size 8 --seed 7 --threads 1"
      " --no-final-eval --workers 1 --num-classes 10 --image-size 16 --lr 0.05 --steps 3";
  const std::string ck = " --checkpoint-dir " + (dir / "ck").string() + " --checkpoint-every 2";
  auto run4 = [&](const std::string& name, const std::string& extra, int code) {
    fs::create_directories(dir / name);
    ct::Workers w(dir / name, 4, args + extra);
    const auto deadline = ct::Clock::now() + std::chrono::seconds(300);
    for (int r = 0; r < 4; ++r) EXPECT_EQ(w.wait(r, deadline), code) << name << " rank " << r << ": " << w.output(r);
  };
  run4("straight", " --log " + (dir / "a.jsonl").string() + " --save-weights " + (dir / "a.pt").string(), 0);
  run4("crash", ck + " --crash-after-step 1 --log " + (dir / "b1.jsonl").string(), 137);
  run4("resume", ck + " --resume auto --log " + (dir / "b2.jsonl").string() + " --save-weights " + (dir / "b.pt").string(), 0);
  EXPECT_NE(ct::read_file(dir / "resume" / "err0.txt").find("at step 2"), std::string::npos)
      << ct::read_file(dir / "resume" / "err0.txt");
  auto b = losses_of(dir / "b1.jsonl");
  const auto b2 = losses_of(dir / "b2.jsonl");
  b.insert(b.end(), b2.begin(), b2.end());
  const auto a = losses_of(dir / "a.jsonl");
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(b, a);
  EXPECT_TRUE(file_bytes(dir / "a.pt") == file_bytes(dir / "b.pt")) << "final weights differ";
  fs::remove_all(dir);
}
