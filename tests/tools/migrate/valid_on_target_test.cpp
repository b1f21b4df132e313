// Rewrites that looked right and were wrong on the target, found by migrating public training
// code (llm.c, sd-scripts, Megatron-LM, modded-nanogpt, accelerate, DeepLearningExamples, the
// gpu-mode lectures): each construct is now rewritten into code valid there, or flagged and kept.
#include "tools/migrate/file_migration.h"
#include "tools/migrate/migration_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace crosstrain::migrate;
using namespace crosstrain::migrate::testing;

namespace {

const Target A = Target::DeviceAgnostic, N = Target::Npu, C = Target::Cpu;

std::string migrated(const std::string& src, Target target) {
  FileMigration m = migrate_source("f.py", src, target);
  EXPECT_NE(m.status, FileStatus::RewriteFailed) << m.detail;
  return output(m, src);
}

bool flags(const FileMigration& m, const char* rule, size_t line) {
  auto all = flagged(m);
  return std::find(all.begin(), all.end(), std::make_pair(std::string(rule), line)) != all.end();
}

}  // namespace

// llm.c loads its model under a CUDA default type, then restores the CPU one: the restore must
// also undo the default device the rewrite set, or every later factory makes accelerator tensors.
TEST(MigrateDefaultTypeRestore, TheRestoreResetsTheDefaultDevice) {
  const std::string src =
      "import torch\n"
      "def load(make):\n"
      "    torch.set_default_tensor_type(torch.cuda.BFloat16Tensor)\n"
      "    model = make()\n"
      "    torch.set_default_tensor_type(torch.tensor([], device=\"cpu\").type())  # restore\n"
      "    torch.set_default_tensor_type(torch.FloatTensor)\n"
      "    return model\n";
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    EXPECT_FALSE(fails_check(m)) << target_name(t);
    std::string out = output(m, src);
    EXPECT_NE(out.find("    torch.set_default_tensor_type(torch.tensor([], device=\"cpu\").type()); "
                       "torch.set_default_device(None)  # restore\n"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("    torch.set_default_tensor_type(torch.FloatTensor); torch.set_default_device(None)\n"),
              std::string::npos)
        << out;
    EXPECT_EQ(migrated(out, t), out) << "idempotent";
  }
}

TEST(MigrateDefaultTypeRestore, OnlyAfterARewrittenCudaDefaultTypeAndFlaggedWhereNoStatement) {
  // No CUDA default type rewritten (none, or a file calling torch.Tensor(...)): restores stay.
  const std::string plain = "import torch\ntorch.set_default_tensor_type(torch.DoubleTensor)\n";
  EXPECT_EQ(migrated(plain, A), plain);
  const std::string legacy =
      "import torch\ntorch.set_default_tensor_type(torch.cuda.FloatTensor)\nx = torch.Tensor(3)\n"
      "torch.set_default_tensor_type(torch.FloatTensor)\n";
  EXPECT_EQ(migrated(legacy, A).find("set_default_device"), std::string::npos);
  // A restore inside an expression cannot take a statement after it.
  const std::string lambda =
      "import torch\ntorch.set_default_tensor_type('torch.cuda.FloatTensor')\n"
      "restore = lambda: torch.set_default_tensor_type(torch.FloatTensor)\n";
  FileMigration m = migrate_source("f.py", lambda, C);
  EXPECT_TRUE(flags(m, "legacy-tensor-type-unproven", 3)) << ::testing::PrintToString(flagged(m));
}

// torch.cuda.amp as a module is not torch.amp: an alias would call torch.amp.autocast without its
// device_type, a store would replace torch.amp itself (sd-scripts' IPEX hijacks).
TEST(MigrateAmpModule, TheModuleAsAValueIsFlaggedAndKept) {
  const std::string src =
      "import torch\n"
      "amp = torch.cuda.amp\n"
      "if not hasattr(torch.cuda.amp, 'common'):\n"
      "    torch.cuda.amp.common = None\n"
      "torch.cuda.amp = xpu_amp\n"
      "torch.cuda.amp.common.amp_definitely_not_available = lambda: False\n"
      "with torch.cuda.amp.autocast():\n"
      "    pass\n";
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    EXPECT_TRUE(flags(m, "amp-module", 2) && flags(m, "amp-module", 3)) << ::testing::PrintToString(flagged(m));
    EXPECT_TRUE(flags(m, "torch-cuda-store", 4) && flags(m, "torch-cuda-store", 5) && flags(m, "torch-cuda-store", 6))
        << ::testing::PrintToString(flagged(m));
    std::string out = output(m, src);
    EXPECT_NE(out.find("amp = torch.cuda.amp\nif not hasattr(torch.cuda.amp, 'common'):\n    torch.cuda.amp.common = None\n"
                       "torch.cuda.amp = xpu_amp\ntorch.cuda.amp.common.amp_definitely_not_available = lambda: False\n"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("with torch.amp.autocast(device_type="), std::string::npos) << out;  // the listed name still is
  }
}

TEST(MigrateAmpModule, PatchesOfTorchCudaAreFlaggedNotMovedToAnotherModule) {
  const std::string src =
      "import torch\n"
      "original = torch.cuda.synchronize\n"
      "torch.cuda.synchronize = my_sync\n"
      "torch.cuda.Stream, torch.cuda.current_stream = A, B\n"
      "del torch.cuda.set_device\n"
      "torch.backends.cudnn.benchmark = True\n";
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    for (size_t line : {3u, 4u, 5u}) EXPECT_TRUE(flags(m, "torch-cuda-store", line)) << line << " " << target_name(t);
    std::string out = output(m, src);
    EXPECT_NE(out.find("torch.cuda.synchronize = my_sync\ntorch.cuda.Stream, torch.cuda.current_stream = A, B\n"
                       "del torch.cuda.set_device\n"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("original = torch.cuda.synchronize"), std::string::npos) << "a read is still rewritten";
  }
}

// A value chosen by the test (`"cuda" if torch.cuda.is_available() else "cpu"`) is not a stored
// test: reads that compare it with "cuda" do not keep torch.cuda.is_available() (on npu that
// would pick the CPU on every NPU machine).
TEST(MigrateStoredTest, AChosenDeviceStringTakesItsTestAlong) {
  const std::string src =
      "import torch\n"
      "def load(x):\n"
      "    device = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n"
      "    dtype = torch.bfloat16 if device == \"cuda\" else torch.float32\n"
      "    return x.to(device, dtype=dtype)\n";
  std::string npu = migrated(src, N);
  EXPECT_NE(npu.find("    device = \"npu\" if torch.npu.is_available() else \"cpu\"\n"), std::string::npos) << npu;
  std::string agnostic = migrated(src, A);
  EXPECT_NE(agnostic.find("    device = _accel_device.type if torch.accelerator.is_available() else \"cpu\"\n"),
            std::string::npos)
      << agnostic;
  // A stored flag still keeps its test where the code it decides keeps a flagged call.
  const std::string flag =
      "import torch\ncuda = True if torch.cuda.is_available() else False\nT = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n";
  EXPECT_NE(migrated(flag, N).find("cuda = True if torch.cuda.is_available() else False\n"), std::string::npos);
}

// `.cuda(device=i)` is `.cuda(i)`: one torch.device around the index, not two.
TEST(MigrateCudaDeviceKeyword, TheIndexIsWrappedOnce) {
  const std::string src =
      "import torch\nlocal_rank = 0\nmodel = model.cuda(device=local_rank)\nloss = loss_fn.cuda(device=0, non_blocking=True)\n";
  EXPECT_NE(migrated(src, N).find("model = model.to(torch.device(\"npu\", local_rank))\n"
                                  "loss = loss_fn.to(torch.device(\"npu\", 0), non_blocking=True)\n"),
            std::string::npos)
      << migrated(src, N);
  EXPECT_NE(migrated(src, A).find("model = model.to(torch.device(_accel_device.type, local_rank))\n"), std::string::npos)
      << migrated(src, A);
  EXPECT_NE(migrated(src, C).find("model = model.to(\"cpu\")\nloss = loss_fn.to(\"cpu\", non_blocking=True)\n"),
            std::string::npos)
      << migrated(src, C);
}

// torch.cpu.Stream (torch 2.11) takes only priority= and has only wait_stream, wait_event and
// record_event: what it lacks is flagged on cpu and device-agnostic (its CPU fallback), not on npu.
TEST(MigrateCpuStreams, WhatTorchCpuStreamLacksIsFlagged) {
  const std::string src =
      "import torch\n"
      "comm = torch.cuda.Stream(device=\"cuda\")\n"
      "_, high = torch.cuda.Stream.priority_range()\n"
      "torch.cuda.current_stream().synchronize()\n"
      "side = torch.cuda.Stream(priority=-1)\n"
      "side.wait_stream(torch.cuda.current_stream())\n"
      "side.synchronize()\n";
  for (Target t : {A, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    for (size_t line : {2u, 3u, 4u, 7u}) EXPECT_TRUE(flags(m, "torch.cuda.Stream", line) || flags(m, "torch.cuda.current_stream", line))
        << line << " " << ::testing::PrintToString(flagged(m));
    EXPECT_EQ(m.findings.size(), 4u) << ::testing::PrintToString(flagged(m));
    std::string out = output(m, src);
    EXPECT_NE(out.find("comm = torch.cuda.Stream(device=\"cuda\")\n"), std::string::npos) << out;  // kept whole
  }
  EXPECT_NE(migrated(src, C).find("side = torch.cpu.Stream(priority=-1)\nside.wait_stream(torch.cpu.current_stream())\n"),
            std::string::npos);
  EXPECT_TRUE(migrate_source("f.py", src, N).findings.empty());
}

// "cuda:nccl,cpu:gloo" (FSDP with CPU offload) is a backend like "nccl": its CUDA entry becomes
// the target's.
TEST(MigrateCompositeBackend, TheCudaEntryBecomesTheTargets) {
  const std::string src =
      "import torch\nimport torch.distributed as dist\n"
      "dist.init_process_group(backend=\"cuda:nccl,cpu:gloo\", device_id=device)\n"
      "state.backend = 'cuda:nccl,cpu:gloo'\n"
      "dist.init_process_group('cuda:nccl')\n";
  std::string npu = migrated(src, N);
  EXPECT_NE(npu.find("dist.init_process_group(backend=\"npu:hccl,cpu:gloo\", device_id=device)\n"
                     "state.backend = 'npu:hccl,cpu:gloo'\ndist.init_process_group('npu:hccl')\n"),
            std::string::npos)
      << npu;
  std::string cpu = migrated(src, C);
  EXPECT_NE(cpu.find("dist.init_process_group(backend=\"cpu:gloo\", device_id=device)\n"
                     "state.backend = 'cpu:gloo'\ndist.init_process_group('cpu:gloo')\n"),
            std::string::npos)
      << cpu;
  std::string agnostic = migrated(src, A);
  EXPECT_NE(agnostic.find("dist.init_process_group(backend=(f\"{_accel_device.type}:{torch.distributed."
                          "get_default_backend_for_device(_accel_device)},cpu:gloo\" if _accel_device.type != \"cpu\" "
                          "else \"cpu:gloo\"), device_id=device)\n"),
            std::string::npos)
      << agnostic;
  for (Target t : {A, N, C}) EXPECT_EQ(migrated(migrated(src, t), t), migrated(src, t)) << "idempotent";
  // Elsewhere it is flagged, like "nccl"; device lists and messages are not backends.
  FileMigration m = migrate_source("f.py", "import torch\nCHOICES = ['cuda:nccl,cpu:gloo']\nd = x.to('cuda:0,cuda:1')\n", C);
  EXPECT_TRUE(flags(m, "nccl-string", 2)) << ::testing::PrintToString(flagged(m));
}

// torch.device("cuda", i) on the CPU is cpu:i, which torch.load refuses as map_location
// (DeepLearningExamples' BERT): the index goes there, as for "cuda:N".
TEST(MigrateIndexedDevice, TheCpuDeviceHasNoIndex) {
  const std::string src =
      "import torch\ndevice = torch.device(\"cuda\", local_rank)\nd0 = torch.device(\"cuda:0\")\n"
      "d1 = torch.device(type='cuda', index=1)\nd2 = torch.device(\"cuda\")\n";
  EXPECT_NE(migrated(src, C).find("device = torch.device(\"cpu\")\nd0 = torch.device(\"cpu\")\n"
                                  "d1 = torch.device(\"cpu\")\nd2 = torch.device(\"cpu\")\n"),
            std::string::npos)
      << migrated(src, C);
  EXPECT_NE(migrated(src, A).find("device = (torch.device(_accel_device.type, local_rank) if _accel_device.type != \"cpu\" "
                                  "else torch.device(\"cpu\"))\n"
                                  "d0 = torch.device((f\"{_accel_device.type}:0\" if _accel_device.type != \"cpu\" else \"cpu\"))\n"
                                  "d1 = (torch.device(type=_accel_device.type, index=1) if _accel_device.type != \"cpu\" "
                                  "else torch.device(\"cpu\"))\n"
                                  "d2 = torch.device(_accel_device.type)\n"),
            std::string::npos)
      << migrated(src, A);
  EXPECT_NE(migrated(src, N).find("device = torch.device(\"npu\", local_rank)\nd0 = torch.device(\"npu:0\")\n"),
            std::string::npos)
      << migrated(src, N);
  for (Target t : {A, N, C}) EXPECT_EQ(migrated(migrated(src, t), t), migrated(src, t)) << "idempotent";
}

// CUDA kernels compiled at run time (gpu-mode's lecture 1) are flagged as a CUDAExtension is.
TEST(MigrateInlineExtension, LoadInlineWithCudaSourcesIsFlagged) {
  const std::string src =
      "from torch.utils.cpp_extension import load_inline, load\n"
      "ext = load_inline(name='sq', cpp_sources=cpp, cuda_sources=cuda_src, functions=['square'])\n"
      "ext2 = load(name='k', sources=['k.cpp'], extra_cuda_cflags=['-O2'])\n"
      "ext3 = load_inline(name='c', cpp_sources=cpp, functions=['f'])\n";
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    EXPECT_TRUE(flags(m, "cuda-extension", 2) && flags(m, "cuda-extension", 3)) << ::testing::PrintToString(flagged(m));
    EXPECT_EQ(m.findings.size(), 2u) << "a C++-only load_inline is fine";
    EXPECT_TRUE(fails_check(m));
  }
}

// NVIDIA-only kernel libraries fail --check; CUDA-only environment variables are noted.
TEST(MigrateNvidiaOnly, KernelLibrariesAreFlaggedAndCudaSettingsNoted) {
  const std::string src =
      "import os\nimport flash_attn\nfrom transformer_engine import pytorch as te\nimport xformers.ops\n"
      "model = AutoModel.from_pretrained(name, attn_implementation=\"flash_attention_2\")\n"
      "if args.attn == 'flash_attention_2':\n    pass\n";
  FileMigration m = migrate_source("f.py", src, A);
  for (size_t line : {2u, 3u, 4u, 5u}) EXPECT_TRUE(flags(m, "nvidia-kernels", line)) << line;
  EXPECT_FALSE(flags(m, "nvidia-kernels", 6)) << "a comparison names what it tests";
  EXPECT_TRUE(fails_check(m));
  const std::string env =
      "import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\n"
      "os.environ[\"CUDA_DEVICE_MAX_CONNECTIONS\"] = \"1\"\nblocking = os.getenv('CUDA_LAUNCH_BLOCKING')\n";
  for (Target t : {A, N, C}) {
    FileMigration e = migrate_source("f.py", env, t);
    for (size_t line : {2u, 3u, 4u}) EXPECT_TRUE(flags(e, "cuda-env", line)) << line;
    EXPECT_FALSE(fails_check(e));
  }
  EXPECT_NE(migrate_source("f.py", env, N).findings[0].advice.find("PYTORCH_NPU_ALLOC_CONF"), std::string::npos);
}

// `from torch.cuda import synchronize, set_device` (gpu-mode lectures, Megatron's utilities): the
// names' uses are not followed, so the import itself moves when the target's device module has
// every name under the same name; otherwise each name is flagged at the import, as before.
TEST(MigrateImportedCudaNames, TheImportMovesWhenEveryNameIsTheTargetsToo) {
  const std::string src =
      "import torch\n"
      "from torch.cuda import synchronize, set_device as pick\n"
      "def run(i):\n"
      "    pick(i)\n"
      "    synchronize()\n";
  FileMigration npu = migrate_source("f.py", src, N);
  EXPECT_TRUE(flagged(npu).empty()) << ::testing::PrintToString(flagged(npu));
  const std::string out = output(npu, src);
  EXPECT_NE(out.find("from torch_npu.npu import synchronize, set_device as pick\n"), std::string::npos) << out;
  EXPECT_NE(out.find("    pick(i)\n    synchronize()\n"), std::string::npos) << out;
  EXPECT_EQ(migrated(out, N), out) << "idempotent";
  EXPECT_NE(migrated(src, C).find("from torch.cpu import synchronize, set_device as pick\n"), std::string::npos);
  // device-agnostic spells them through the device's module: no single module to import from.
  FileMigration agnostic = migrate_source("f.py", src, A);
  EXPECT_TRUE(flags(agnostic, "torch.cuda", 2)) << ::testing::PrintToString(flagged(agnostic));
  EXPECT_NE(output(agnostic, src).find("from torch.cuda import synchronize"), std::string::npos);
  // One name the target spells otherwise (or keeps as torch.cuda's): the import stays, flagged.
  const std::string mixed = "import torch\nfrom torch.cuda import synchronize, memory_allocated\n";
  FileMigration cpu = migrate_source("f.py", mixed, C);
  EXPECT_EQ(output(cpu, mixed), mixed);
  EXPECT_TRUE(flags(cpu, "torch.cuda", 2)) << ::testing::PrintToString(flagged(cpu));
}
