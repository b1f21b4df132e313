// Migrated snippets run with the .venv torch on the CPU (no GPU visible): each construct below
// was rewritten into code that raised or misplaced tensors there, and must now run. The
// default-type case stands in a meta device for the accelerator, where the CPU alone cannot
// tell a reset device from one never set.
#include "tools/migrate/file_migration.h"
#include "tools/migrate/migration_test_support.h"

#include <gtest/gtest.h>

using namespace crosstrain::migrate;
using namespace crosstrain::migrate::testing;

namespace {

const Target A = Target::DeviceAgnostic, C = Target::Cpu;

// Migrates `src` for `target`, requires that --check would pass, and runs the result.
void expect_runs(const std::string& src, Target target, const std::string& replace_from = {},
                 const std::string& replace_to = {}) {
  FileMigration m = migrate_source("f.py", src, target);
  ASSERT_NE(m.status, FileStatus::RewriteFailed) << m.detail;
  EXPECT_FALSE(fails_check(m)) << ::testing::PrintToString(flagged(m));
  std::string script = output(m, src);
  if (!replace_from.empty()) {
    size_t at = script.find(replace_from);
    ASSERT_NE(at, std::string::npos) << script;
    script.replace(at, replace_from.size(), replace_to);
  }
  std::string out;
  int code = run_python(script, out);
  EXPECT_EQ(code, 0) << target_name(target) << "\n" << out << "\n--- migrated ---\n" << script;
  EXPECT_NE(out.find("ok"), std::string::npos) << out;
}

}  // namespace

// llm.c's model loading under a CUDA default type, then its restore: later factories make CPU
// tensors again. With the accelerator played by "meta", the unreset device left them on meta.
TEST(MigratedScriptRuns, DefaultTypeRestoreBringsFactoriesBackToTheCpu) {
  const std::string src =
      "import torch\n"
      "def load(make):\n"
      "    original = torch.get_default_dtype()\n"
      "    torch.set_default_tensor_type(torch.cuda.BFloat16Tensor)\n"
      "    model = make()\n"
      "    torch.set_default_tensor_type(torch.tensor([], dtype=original, device=\"cpu\").type())\n"
      "    return model\n"
      "model = load(lambda: torch.nn.Linear(2, 2))\n"
      "assert model.weight.dtype == torch.bfloat16, model.weight.dtype\n"
      "x = torch.zeros(3)\n"
      "assert x.device.type == \"cpu\" and x.dtype == torch.float32, (x.device, x.dtype)\n"
      "print(\"ok\", model.weight.device)\n";
  const std::string definition =
      "_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")";
  expect_runs(src, A, definition, "_accel_device = torch.device(\"meta\")");
  expect_runs(src, A);
  expect_runs(src, C);
}

// `.cuda(device=local_rank)` became `torch.device(T, torch.device(T, local_rank))`: TypeError.
TEST(MigratedScriptRuns, CudaWithADeviceKeyword) {
  const std::string src =
      "import os\nimport torch\n"
      "local_rank = int(os.environ.get(\"LOCAL_RANK\", 0))\n"
      "model = torch.nn.Linear(4, 4).cuda(device=local_rank)\n"
      "criterion = torch.nn.CrossEntropyLoss().cuda(device=0)\n"
      "print(\"ok\", next(model.parameters()).device)\n";
  expect_runs(src, A);
  expect_runs(src, C);
}

// DeepLearningExamples' BERT: a device made of a type and an index, then a checkpoint loaded with
// it as map_location, which refuses cpu:0.
TEST(MigratedScriptRuns, IndexedDeviceAsMapLocation) {
  const std::string src =
      "import os\nimport torch\n"
      "local_rank = int(os.environ.get(\"LOCAL_RANK\", 0))\n"
      "device = torch.device(\"cuda\", local_rank)\n"
      "device0 = torch.device(\"cuda:0\")\n"
      "model = torch.nn.Linear(2, 2).to(device)\n"
      "torch.save(model.state_dict(), \"m.pt\")\n"
      "model.load_state_dict(torch.load(\"m.pt\", map_location=device))\n"
      "model.load_state_dict(torch.load(\"m.pt\", map_location=device0))\n"
      "print(\"ok\")\n";
  expect_runs(src, A);
  expect_runs(src, C);
}

// What torch.cpu's streams offer is rewritten and runs; Megatron's prefetch stream shape.
TEST(MigratedScriptRuns, StreamsWithinWhatTorchCpuOffers) {
  const std::string src =
      "import torch\n"
      "side = torch.cuda.Stream(priority=-1)\n"
      "side.wait_stream(torch.cuda.current_stream())\n"
      "with torch.cuda.stream(side):\n"
      "    x = torch.ones(4, device=\"cuda\") * 2\n"
      "torch.cuda.current_stream().wait_stream(side)\n"
      "torch.cuda.synchronize()\n"
      "print(\"ok\", x.sum().item())\n";
  expect_runs(src, A);
  expect_runs(src, C);
}

// Names imported from torch.cuda come from torch.cpu when it has them all.
TEST(MigratedScriptRuns, NamesImportedFromTorchCuda) {
  const std::string src =
      "import torch\n"
      "from torch.cuda import synchronize, set_device, stream\n"
      "set_device(0)\n"
      "with stream(torch.cpu.Stream()):\n"
      "    synchronize()\n"
      "print(\"ok\")\n";
  expect_runs(src, C);
}

// modded-nanogpt's FSDP-style backend string, one process with a file store.
TEST(MigratedScriptRuns, CompositeBackend) {
  const std::string src =
      "import torch\nimport torch.distributed as dist\n"
      "dist.init_process_group(backend=\"cuda:nccl,cpu:gloo\", init_method=\"file://\" + __import__('os').path.abspath(\"store\"),\n"
      "                        rank=0, world_size=1)\n"
      "t = torch.ones(2)\ndist.all_reduce(t)\ndist.destroy_process_group()\n"
      "print(\"ok\", t.tolist())\n";
  expect_runs(src, A);
  expect_runs(src, C);
}
