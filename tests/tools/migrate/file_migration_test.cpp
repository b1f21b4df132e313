// One file at a time: what is left alone (comments, docstrings, other strings, formatting), the
// safety rules (syntax errors, non-UTF-8 input) and the findings for code that needs a human.
#include "tools/migrate/file_migration.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace crosstrain::migrate;

namespace {

std::vector<std::string> finding_rules(const FileMigration& m) {
  std::vector<std::string> ids;
  for (const auto& f : m.findings) ids.emplace_back(f.rule->id);
  return ids;
}

TEST(FileMigration, CommentsDocstringsAndOtherStringsAreNotCode) {
  const std::string src =
      "\"\"\"Module doc: call model.cuda() when torch.cuda.is_available(); device=\"cuda\".\"\"\"\n"
      "import torch\n"
      "# model.cuda()  torch.cuda.synchronize()  \"cuda\"\n"
      "def f(model):\n"
      "    \"\"\"Moves to \"cuda\" with .cuda().\"\"\"\n"
      "    print(\"use .cuda() or torch.cuda.is_available()\")  # torch.cuda.empty_cache()\n"
      "    msg = 'cuda:0 is the first GPU'\n"
      "    return model.cuda()\n"
      "if __name__ == \"__main__\":\n"
      "    f(torch.nn.Linear(2, 2))\n";
  FileMigration m = migrate_source("f.py", src, Target::Npu);
  ASSERT_EQ(m.status, FileStatus::Migrated);
  std::string expected = src;
  expected.replace(expected.find("return model.cuda()"), 19, "return model.to(\"npu\")");
  expected.replace(expected.find("import torch\n") + 13, 0, "import torch_npu\n");
  EXPECT_EQ(m.migrated, expected);
  // The non-code "cuda" mentions produce no findings either.
  EXPECT_TRUE(m.findings.empty()) << m.findings.size();
  // A module without an entry point (a library module) does not get `import torch_npu`.
  FileMigration lib = migrate_source("lib.py", "import torch\ndef f(m):\n    return m.cuda()\n", Target::Npu);
  EXPECT_EQ(lib.migrated.find("torch_npu"), std::string::npos) << lib.migrated;
}

TEST(FileMigration, OnlyChangedSpansDiffer) {
  const std::string src = "import torch\nx   =   torch.ones( 3 ,\n    dtype=torch.float32 ).cuda(  )   # trailing\n";
  FileMigration m = migrate_source("f.py", src, Target::Cpu);
  ASSERT_EQ(m.status, FileStatus::Migrated);
  EXPECT_EQ(m.migrated, "import torch\nx   =   torch.ones( 3 ,\n    dtype=torch.float32 ).to(\"cpu\"  )   # trailing\n");
  ASSERT_EQ(m.changes.size(), 1u);
  EXPECT_EQ(m.changes[0].start_line, 3u);  // the edits start at `cuda`, on the call's last line
  EXPECT_EQ(m.changes[0].end_line, 3u);
  EXPECT_EQ(m.lines_changed, 1u);
}

TEST(FileMigration, SyntaxErrorFileIsLeftUntouched) {
  const std::string src = "import torch\ndef f(:\n    return x.cuda()\n";
  FileMigration m = migrate_source("bad.py", src, Target::DeviceAgnostic);
  EXPECT_EQ(m.status, FileStatus::SyntaxError);
  EXPECT_TRUE(m.changes.empty());
  EXPECT_TRUE(m.migrated.empty());
  EXPECT_NE(m.detail.find("line 2"), std::string::npos) << m.detail;
}

TEST(FileMigration, UnclosedBracketIsASyntaxError) {
  FileMigration m = migrate_source("open.py", "x = y.cuda(\nz = 1\n", Target::Cpu);
  EXPECT_EQ(m.status, FileStatus::SyntaxError);
  EXPECT_TRUE(m.changes.empty());
}

TEST(FileMigration, NonUtf8AndBinaryAreSkipped) {
  EXPECT_EQ(migrate_source("latin1.py", "s = '\xe9t\xe9'\nx.cuda()\n", Target::Cpu).status, FileStatus::NotUtf8);
  EXPECT_EQ(migrate_source("bin.py", std::string("x.cuda()\0\x01", 10), Target::Cpu).status, FileStatus::NotUtf8);
  EXPECT_EQ(migrate_source("u.py", "s = '\xc3\xa9t\xc3\xa9'\nx.cuda()\n", Target::Cpu).status, FileStatus::Migrated);
}

TEST(FileMigration, Utf8Validation) {
  EXPECT_TRUE(looks_like_utf8_text("plain \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(looks_like_utf8_text("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(looks_like_utf8_text("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(looks_like_utf8_text("\xe2\x82"));          // truncated
  EXPECT_FALSE(looks_like_utf8_text("\xf4\x90\x80\x80"));  // past U+10FFFF
}

TEST(FileMigration, ReportsWhatNeedsAHuman) {
  const std::string src =
      "import torch\n"
      "import apex\n"
      "from apex.optimizers import FusedAdam\n"
      "import cupy as cp\n"
      "import pynvml\n"
      "import triton\n"
      "from nvidia.dali import pipeline_def\n"
      "from torch.utils.cpp_extension import CUDAExtension\n"
      "torch.backends.cudnn.benchmark = True\n"
      "torch.cuda.nvtx.range_push('step')\n"
      "g = torch.cuda.CUDAGraph()\n"
      "ext = CUDAExtension('k', ['k.cpp', 'kernel.cu'])\n"
      "name = torch.cuda.get_device_name(0)\n"
      "if args.device == 'cuda':\n"
      "    pass\n"
      "flag = x.is_cuda\n"
      "import torch.cuda.amp as tamp\n";
  FileMigration m = migrate_source("f.py", src, Target::Npu);
  EXPECT_EQ(m.status, FileStatus::Unchanged);  // nothing rewritable, so torch_npu is not added
  auto ids = finding_rules(m);
  for (const char* rule : {"apex", "cupy", "pynvml", "triton", "dali", "cuda-extension", "torch.backends.cudnn",
                           "torch.cuda.nvtx", "torch.cuda.CUDAGraph", "torch.cuda", "cuda-test"})
    EXPECT_NE(std::find(ids.begin(), ids.end(), rule), ids.end()) << rule;
  // apex twice (two imports), CUDAExtension import + call + the .cu source.
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "apex"), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "cuda-extension"), 3);
  for (const auto& f : m.findings) {
    if (std::string(f.rule->id) == "torch.backends.cudnn") {
      EXPECT_EQ(f.line, 9u);
      EXPECT_NE(f.advice.find("harmless"), std::string::npos);
    }
    if (std::string(f.rule->id) == "triton") EXPECT_NE(f.advice.find("triton-ascend"), std::string::npos);
  }
}

TEST(FileMigration, FindingsDependOnTarget) {
  FileMigration cpu = migrate_source("f.py", "import triton\n", Target::Cpu);
  FileMigration agnostic = migrate_source("f.py", "import triton\n", Target::DeviceAgnostic);
  ASSERT_EQ(cpu.findings.size(), 1u);
  ASSERT_EQ(agnostic.findings.size(), 1u);
  EXPECT_NE(cpu.findings[0].advice, agnostic.findings[0].advice);
}

TEST(FileMigration, DeeplyNestedInputDoesNotCrash) {
  std::string src = "x = " + std::string(3000, '(') + "y.cuda()" + std::string(3000, ')') + "\n";
  FileMigration m = migrate_source("deep.py", src, Target::Cpu);
  EXPECT_TRUE(m.status == FileStatus::Migrated || m.status == FileStatus::SyntaxError);
}

// Rewrites never read a variable of the file: a local `device` assigned on some paths only (or
// later) cannot leave a rewrite unbound. They read the inserted module-level `_accel_device`.
TEST(FileMigration, RewritesReadOnlyTheInsertedModuleDevice) {
  const std::string src =
      "import torch\ndef build(use_mps):\n    m = torch.nn.Linear(4, 2)\n    if use_mps:\n"
      "        device = torch.device(\"mps\"); m = m.to(device)\n    else:\n        m = m.cuda()\n    return m\n";
  FileMigration m = migrate_source("f.py", src, Target::DeviceAgnostic);
  ASSERT_EQ(m.status, FileStatus::Migrated);
  EXPECT_TRUE(m.findings.empty());
  EXPECT_NE(m.migrated.find("        m = m.to(_accel_device)\n"), std::string::npos) << m.migrated;
  EXPECT_LT(m.migrated.find("_accel_device = torch.accelerator"), m.migrated.find("def build")) << m.migrated;
}

// A string stays a string: "cuda" becomes the target's device type, never a torch.device.
TEST(FileMigration, StringDevicesKeepTheirKind) {
  const std::string src = "import torch\ndevice = 'cuda'\ndevice_type = 'cuda' if 'cuda' in device else 'cpu'\n"
                          "def f(device: str = 'cuda'):\n    return device.upper()\n";
  FileMigration m = migrate_source("f.py", src, Target::DeviceAgnostic);
  EXPECT_NE(m.migrated.find("device = _accel_device.type\n"), std::string::npos) << m.migrated;
  EXPECT_NE(m.migrated.find("device_type = _accel_device.type if _accel_device.type in device else 'cpu'\n"),
            std::string::npos) << m.migrated;
  EXPECT_NE(m.migrated.find("def f(device: str = _accel_device.type):"), std::string::npos) << m.migrated;
  FileMigration npu = migrate_source("f.py", src, Target::Npu);
  EXPECT_NE(npu.migrated.find("device_type = 'npu' if 'npu' in device else 'cpu'\n"), std::string::npos) << npu.migrated;
}

TEST(FileMigration, EmptyFile) {
  EXPECT_EQ(migrate_source("e.py", "", Target::DeviceAgnostic).status, FileStatus::Unchanged);
}

}  // namespace

// What cannot be proven equivalent on CUDA and valid on the target is flagged and left as written.
TEST(FileMigration, UnprovenRewritesAreFlaggedNotMade) {
  const std::string src =
      "import torch\n"
      "from torch.cuda.amp import autocast\n"
      "start = torch.cuda.Event(enable_timing=True)\n"
      "ctx = autocast if amp else None\n"
      "amp_ctx = torch.cuda.amp.autocast\n"
      "per_node = torch.cuda.device_count() // 2\n"
      "if torch.cuda.device_count() > 1:\n"
      "    pass\n"
      "def f(x, where):\n"
      "    return x.cuda(where)\n";
  for (Target target : {Target::DeviceAgnostic, Target::Cpu}) {
    FileMigration m = migrate_source("f.py", src, target);
    auto ids = finding_rules(m);
    for (const char* rule : {"event-timing", "amp-reference", "device-count-number"})
      EXPECT_NE(std::find(ids.begin(), ids.end(), rule), ids.end()) << rule << " on " << target_name(target);
    std::string out = m.status == FileStatus::Migrated ? m.migrated : src;
    EXPECT_NE(out.find("from torch.cuda.amp import autocast\n"), std::string::npos) << out;  // kept: used as a value
    EXPECT_NE(out.find("torch.cuda.Event(enable_timing=True)"), std::string::npos) << out;
  }
  // `.cuda(where)`: an index or a device? Device-agnostic cannot tell (cpu moves it to "cpu" either way).
  FileMigration agnostic = migrate_source("f.py", src, Target::DeviceAgnostic);
  auto ids = finding_rules(agnostic);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "int-device"), ids.end());
  EXPECT_NE(agnostic.migrated.find("x.cuda(where)"), std::string::npos) << agnostic.migrated;
  // torch_npu's Event times on the NPU: not flagged there.
  auto npu = finding_rules(migrate_source("f.py", src, Target::Npu));
  EXPECT_EQ(std::find(npu.begin(), npu.end(), "event-timing"), npu.end());
}

// A name that conventionally holds an index but is bound here by something the analysis cannot
// see through (a loop, an environment string) is flagged where it is placed, not guessed.
TEST(FileMigration, IndexNamesOfUnknownKindAreFlagged) {
  const std::string src =
      "import os\n"
      "import torch\n"
      "rank = os.environ['RANK']\n"
      "x = torch.ones(2).to(rank)\n"
      "for gpu, y in enumerate(ys):\n"
      "    z = torch.zeros(2, device=gpu)\n";
  for (Target target : {Target::DeviceAgnostic, Target::Npu}) {
    FileMigration m = migrate_source("f.py", src, target);
    auto ids = finding_rules(m);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), "int-device"), 2) << target_name(target);
    EXPECT_EQ(m.status, FileStatus::Unchanged) << m.migrated;
  }
}

// A GradScaler passed around as a value needs the device bound, not autocast's device_type.
TEST(FileMigration, GradScalerReferenceAdviceNamesGradScaler) {
  FileMigration m = migrate_source("f.py", "import torch\nmake = torch.cuda.amp.GradScaler\n", Target::Cpu);
  ASSERT_EQ(m.findings.size(), 1u);
  EXPECT_EQ(std::string(m.findings[0].rule->id), "amp-reference");
  EXPECT_NE(m.findings[0].advice.find("functools.partial(torch.amp.GradScaler, \"cpu\")"), std::string::npos)
      << m.findings[0].advice;
}

TEST(FileMigration, CustomFwdReferenceIsFlaggedWithItsOwnAdvice) {
  FileMigration m = migrate_source("f.py", "import torch\nfwd = torch.cuda.amp.custom_fwd\n", Target::Cpu);
  ASSERT_EQ(m.findings.size(), 1u);
  EXPECT_EQ(std::string(m.findings[0].rule->id), "amp-reference");
  EXPECT_NE(m.findings[0].advice.find("functools.partial(torch.amp.custom_fwd, device_type=\"cpu\")"), std::string::npos)
      << m.findings[0].advice;
}

// Only CUDA reads CUDA_VISIBLE_DEVICES: setting or reading it is flagged on every target.
TEST(FileMigration, CudaVisibleDevicesIsFlagged) {
  const char* src = "import os\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = str(rank)\nn = os.getenv('CUDA_VISIBLE_DEVICES')\n"
                    "\"\"\"CUDA_VISIBLE_DEVICES\"\"\"\n";
  for (Target target : {Target::DeviceAgnostic, Target::Npu, Target::Cpu}) {
    FileMigration m = migrate_source("f.py", src, target);
    ASSERT_EQ(m.findings.size(), 2u);
    EXPECT_EQ(std::string(m.findings[0].rule->id), "cuda-visible-devices");
    EXPECT_EQ(m.findings[1].line, 3u);
    EXPECT_TRUE(m.changes.empty());
  }
}

// On cpu, torch.cuda.is_available() already answers False: it stays (torch.cpu.is_available()
// would answer True and send CPU runs down the CUDA branch).
TEST(FileMigration, CudaAvailabilityStaysOnCpu) {
  FileMigration m = migrate_source("f.py", "import torch\nif torch.cuda.is_available():\n    x = 1\n", Target::Cpu);
  EXPECT_EQ(m.status, FileStatus::Unchanged);
  EXPECT_TRUE(m.findings.empty());
}

TEST(FileMigration, NcclComparisonsAreFlaggedWhereTheBackendDiffers) {
  const std::string src =
      "import torch.distributed as dist\n"
      "a = dist.get_backend() == \"nccl\"\n"
      "b = dist.get_backend() == dist.Backend.NCCL\n"
      "c = backend != Backend.NCCL\n";
  for (Target target : {Target::Npu, Target::Cpu}) {
    FileMigration m = migrate_source("f.py", src, target);
    EXPECT_EQ(finding_rules(m), (std::vector<std::string>{"nccl-test", "nccl-test", "nccl-test"})) << target_name(target);
    EXPECT_TRUE(m.changes.empty()) << m.migrated;
  }
  FileMigration agnostic = migrate_source("f.py", src, Target::DeviceAgnostic);
  EXPECT_TRUE(agnostic.findings.empty());
  EXPECT_TRUE(agnostic.changes.empty());
}

TEST(FileMigration, CudaBackendSettingsAreNotedLikeCudnn) {
  const std::string src =
      "import torch\n"
      "torch.backends.cuda.matmul.allow_tf32 = True\n"
      "torch.backends.cudnn.allow_tf32 = True\n";
  for (Target target : {Target::DeviceAgnostic, Target::Npu, Target::Cpu}) {
    FileMigration m = migrate_source("f.py", src, target);
    EXPECT_EQ(finding_rules(m), (std::vector<std::string>{"torch.backends.cuda", "torch.backends.cudnn"}));
    for (const auto& f : m.findings) EXPECT_FALSE(finding_fails_check(*f.rule)) << f.rule->id;
    EXPECT_EQ(m.status, FileStatus::Unchanged);
  }
}

TEST(FileMigration, NvtxProfilingIsFlagged) {
  const std::string src =
      "import torch\n"
      "with torch.autograd.profiler.emit_nvtx():\n"
      "    pass\n";
  for (Target target : {Target::DeviceAgnostic, Target::Npu, Target::Cpu}) {
    FileMigration m = migrate_source("f.py", src, target);
    EXPECT_EQ(finding_rules(m), (std::vector<std::string>{"torch.autograd.profiler.emit_nvtx"}));
    EXPECT_TRUE(finding_fails_check(*m.findings.at(0).rule));
  }
  // use_device="cuda" is a device string: the target's device type.
  FileMigration p = migrate_source("p.py", "import torch\nprof = torch.autograd.profiler.profile(use_device=\"cuda\")\n", Target::Npu);
  EXPECT_NE(p.migrated.find("use_device=\"npu\""), std::string::npos) << p.migrated;
}

TEST(FileMigration, PinnedCopiesOfUnknownTensorsAreFlagged) {
  const std::string src =
      "import torch\n"
      "def f(batch, pin):\n"
      "    b = batch.pin_memory()\n"
      "    c = torch.empty(2, pin_memory=pin)\n"
      "    return b, c\n";
  for (Target target : {Target::DeviceAgnostic, Target::Cpu}) {
    FileMigration m = migrate_source("f.py", src, target);
    EXPECT_EQ(finding_rules(m), (std::vector<std::string>{"pin-memory-unproven", "pin-memory-unproven"}));
    EXPECT_TRUE(m.changes.empty());
  }
  EXPECT_TRUE(migrate_source("f.py", src, Target::Npu).findings.empty());
}
