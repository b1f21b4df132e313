// Values that travel before they matter: a device count that becomes a process count, an
// availability test stored in a variable, SyncBatchNorm before DDP, a CUDA test whose other
// branch makes CPU tensors. Each snippet is a construct taken from public training programs
// (ImageNet-style mp.spawn trainers, GAN examples, self-supervised trainers' timers).
#include "tools/migrate/file_migration.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace crosstrain::migrate;

namespace {

const Target A = Target::DeviceAgnostic, N = Target::Npu, C = Target::Cpu;

std::string output_of(const std::string& src, Target target) {
  FileMigration m = migrate_source("f.py", src, target);
  EXPECT_NE(m.status, FileStatus::RewriteFailed) << m.detail;
  return m.status == FileStatus::Migrated ? m.migrated : src;
}

std::vector<std::string> finding_rules(const FileMigration& m) {
  std::vector<std::string> ids;
  for (const auto& f : m.findings) ids.emplace_back(f.rule->id);
  return ids;
}

bool has(const std::vector<std::string>& ids, const char* id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

}  // namespace

// One process per GPU found: 0 processes without one, and the program exits 0 having trained
// nothing. Where the count becomes a process count it is at least 1 (unchanged on a GPU machine).
TEST(ProcessCount, SpawnedWorldSizeFromDeviceCountIsAtLeastOne) {
  const std::string src =
      "import torch\nimport torch.multiprocessing as mp\n\n"
      "def main():\n"
      "    ngpus_per_node = torch.cuda.device_count()\n"
      "    world_size = ngpus_per_node * nodes\n"
      "    mp.spawn(worker, nprocs=ngpus_per_node, args=(ngpus_per_node,))\n";
  EXPECT_NE(output_of(src, A).find("    ngpus_per_node = max(1, torch.accelerator.device_count())\n"), std::string::npos);
  EXPECT_NE(output_of(src, N).find("    ngpus_per_node = max(1, torch.npu.device_count())\n"), std::string::npos);
  EXPECT_NE(output_of(src, C).find("    ngpus_per_node = max(1, torch.cuda.device_count())\n"), std::string::npos);
  for (Target t : {A, N, C}) EXPECT_TRUE(migrate_source("f.py", src, t).findings.empty()) << target_name(t);
}

TEST(ProcessCount, EverySinkAndTheNamesBetween) {
  const char* sinks[] = {
      "n = torch.cuda.device_count()\nmp.spawn(train, (n,), n)\n",                  // spawn's third argument
      "world_size = torch.cuda.device_count()\n",                                      // a world size
      "args.world_size = torch.cuda.device_count() * args.nodes\n",                    // through arithmetic
      "n = torch.cuda.device_count()\nk = n\nrun(world_size=k)\n",                     // two names deep
      "n = torch.cuda.device_count()\nps = [mp.Process(target=f, args=(r,)) for r in range(n)]\n",
      "n = torch.cuda.device_count()\nfor r in range(n):\n    p = mp.Process(target=f)\n    p.start()\n",
      "device_id = rank % torch.cuda.device_count()\n",                                // a divisor: 0 divides by zero
  };
  for (const char* body : sinks) {
    const std::string src = std::string("import torch\nimport torch.multiprocessing as mp\n") + body;
    FileMigration m = migrate_source("f.py", src, A);
    EXPECT_TRUE(m.findings.empty()) << body;
    EXPECT_NE(output_of(src, A).find("max(1, torch.accelerator.device_count())"), std::string::npos) << body;
  }
}

// The DDP tutorial asserts two GPUs before it spawns: the count is rewritten, and the assert,
// where a CPU run stops, is what --check names.
TEST(ProcessCount, AnAssertOnTheCountIsFlaggedAtItsLine) {
  const std::string src =
      "import torch\nimport torch.multiprocessing as mp\n"
      "if __name__ == '__main__':\n"
      "    n_gpus = torch.cuda.device_count()\n"
      "    assert n_gpus >= 2, f'Requires at least 2 GPUs to run, but got {n_gpus}'\n"
      "    world_size = n_gpus\n"
      "    mp.spawn(demo, args=(world_size,), nprocs=world_size)\n";
  FileMigration m = migrate_source("f.py", src, A);
  ASSERT_EQ(m.findings.size(), 1u);
  EXPECT_EQ(std::string(m.findings[0].rule->id), "device-count-number");
  EXPECT_EQ(m.findings[0].line, 5u);
  EXPECT_NE(m.migrated.find("n_gpus = max(1, torch.accelerator.device_count())"), std::string::npos) << m.migrated;
}

// A count that is not a process count keeps its value, and the flag says what 0 does.
TEST(ProcessCount, OtherNumbersAreFlaggedWithTheConsequence) {
  const std::string src =
      "import torch\nargs.n_gpu = torch.cuda.device_count()\nhalf = torch.cuda.device_count() // 2\n"
      "ids = list(range(torch.cuda.device_count()))\n";
  for (Target t : {A, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    ASSERT_EQ(m.findings.size(), 3u) << target_name(t);
    for (const auto& f : m.findings) {
      EXPECT_EQ(std::string(f.rule->id), "device-count-number");
      EXPECT_NE(f.advice.find("nprocs=0"), std::string::npos) << f.advice;
    }
    EXPECT_EQ(output_of(src, t), src);
  }
}

// `cuda = True if torch.cuda.is_available() else False` ... `torch.cuda.FloatTensor if cuda else
// torch.FloatTensor` (PyTorch-GAN): the stored test must stay a CUDA test while code it decides
// keeps a CUDA-only call, or another accelerator takes the CUDA branch.
TEST(StoredAvailability, KeptWhileWhatItDecidesKeepsACudaCall) {
  const std::string src =
      "import torch\n"
      "cuda = True if torch.cuda.is_available() else False\n"
      "if cuda:\n"
      "    generator.cuda()\n"
      "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n";
  for (Target t : {A, N}) {
    std::string out = output_of(src, t);
    EXPECT_NE(out.find("cuda = True if torch.cuda.is_available() else False\n"), std::string::npos) << out;
    EXPECT_TRUE(has(finding_rules(migrate_source("f.py", src, t)), "torch.cuda")) << target_name(t);
  }
  // On cpu the kept test is False: what it decides never runs, so nothing is flagged.
  FileMigration cpu = migrate_source("f.py", src, C);
  EXPECT_EQ(cpu.status, FileStatus::Unchanged);
  EXPECT_TRUE(cpu.findings.empty()) << cpu.findings[0].api;
}

TEST(StoredAvailability, RewrittenWhenWhatItDecidesIsPortable) {
  const std::string src =
      "import torch\n"
      "use_cuda = not args.no_cuda and torch.cuda.is_available()\n"
      "if use_cuda:\n"
      "    torch.cuda.synchronize()\n";
  EXPECT_NE(output_of(src, A).find("use_cuda = not args.no_cuda and torch.accelerator.is_available()\n"), std::string::npos);
  EXPECT_NE(output_of(src, N).find("use_cuda = not args.no_cuda and torch.npu.is_available()\n"), std::string::npos);
}

// I-JEPA's timer: `log_timings = log_timings and torch.cuda.is_available()`, then CUDA events
// that time. CPU events do not time, so on device-agnostic the test stays; torch_npu's events
// time, so on npu both change together.
TEST(StoredAvailability, TimingEventsBehindAStoredFlag) {
  const std::string src =
      "import torch\n"
      "def gpu_timer(closure, log_timings=True):\n"
      "    log_timings = log_timings and torch.cuda.is_available()\n"
      "    elapsed_time = -1.\n"
      "    if log_timings:\n"
      "        start = torch.cuda.Event(enable_timing=True)\n"
      "        end = torch.cuda.Event(enable_timing=True)\n"
      "        start.record()\n"
      "    result = closure()\n"
      "    return result, elapsed_time\n";
  EXPECT_NE(output_of(src, A).find("log_timings = log_timings and torch.cuda.is_available()"), std::string::npos);
  std::string npu = output_of(src, N);
  EXPECT_NE(npu.find("log_timings = log_timings and torch.npu.is_available()"), std::string::npos) << npu;
  EXPECT_NE(npu.find("torch.npu.Event(enable_timing=True)"), std::string::npos) << npu;
}

// SyncBatchNorm then DDP: DDP over CPU modules raises "SyncBatchNorm layers only work with GPU
// modules". Converted only with an accelerator; on cpu the module keeps its BatchNorm.
TEST(SyncBatchNorm, ConvertedOnlyWithAnAccelerator) {
  const std::string src =
      "import torch\nmodel = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)\n"
      "student = nn.SyncBatchNorm.convert_sync_batchnorm(self.student, process_group)\n";
  std::string agnostic = output_of(src, A);
  EXPECT_NE(agnostic.find("model = (torch.nn.SyncBatchNorm.convert_sync_batchnorm(model) if _accel_device.type != \"cpu\" "
                          "else model)\n"),
            std::string::npos)
      << agnostic;
  EXPECT_NE(agnostic.find("else self.student)\n"), std::string::npos) << agnostic;
  EXPECT_EQ(output_of(src, C), "import torch\nmodel = model\nstudent = self.student\n");
  EXPECT_EQ(output_of(src, N), src);  // torch_npu runs SyncBatchNorm
  FileMigration odd = migrate_source("f.py", "import torch\nm = nn.SyncBatchNorm.convert_sync_batchnorm(build())\n", C);
  ASSERT_EQ(odd.findings.size(), 1u);
  EXPECT_EQ(std::string(odd.findings[0].rule->id), "sync-batchnorm-unproven");
}

// `Tensor = torch.cuda.FloatTensor if mu.is_cuda else torch.FloatTensor` (PyTorch-GAN's UNIT):
// on another accelerator mu takes the other branch and meets CPU tensors.
TEST(CudaBranch, OtherBranchWithCpuTensorsIsFlagged) {
  const std::string src =
      "import torch\n"
      "def sample(mu):\n"
      "    Tensor = torch.cuda.FloatTensor if mu.is_cuda else torch.FloatTensor\n"
      "    if x.is_cuda:\n"
      "        y = fused(x)\n"
      "    else:\n"
      "        y = x.cpu().numpy()\n"
      "    if x.is_cuda:\n"
      "        z = fused(x)\n"
      "    else:\n"
      "        z = reference(x)\n";
  for (Target t : {A, N}) {
    FileMigration m = migrate_source("f.py", src, t);
    auto ids = finding_rules(m);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), "cuda-branch-cpu-tensors"), 2) << target_name(t);
    for (const auto& f : m.findings)
      if (std::string(f.rule->id) == "cuda-branch-cpu-tensors") EXPECT_TRUE(f.line == 3 || f.line == 4) << f.line;
  }
  EXPECT_FALSE(has(finding_rules(migrate_source("f.py", src, C)), "cuda-branch-cpu-tensors"));
}
