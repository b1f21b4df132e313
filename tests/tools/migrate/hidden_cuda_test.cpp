// CUDA use that the qualified `torch.cuda.*` matching does not see by itself: names imported from
// torch.cuda, `.cuda` referenced without a call, CUDA-only libraries other than torch, a
// dictionary map_location, amp calls that cannot get their device, flagged calls, and files where
// torch itself is optional.
#include "tools/migrate/file_migration.h"
#include "tools/migrate/migration_test_support.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

using namespace crosstrain::migrate;
using namespace crosstrain::migrate::testing;

namespace {

const Target A = Target::DeviceAgnostic, N = Target::Npu, C = Target::Cpu;

TEST(HiddenCuda, NamesImportedFromTorchCudaAreFlaggedAtTheImport) {
  const std::string src =
      "import torch\n"
      "from torch.cuda import synchronize, Event as Ev\n"
      "from torch.cuda import amp\n"
      "from torch.cuda import manual_seed\n"  // valid everywhere but npu
      "start = Ev(enable_timing=True)\n"
      "synchronize()\n"
      "scaler = amp.GradScaler()\n";
  // device-agnostic spells them through the device's module; the CPU checks Event's calls
  // (enable_timing), which the bare name hides. npu has every name: those imports move there.
  for (Target t : {A, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    std::vector<std::pair<std::string, size_t>> want = {{"torch.cuda", 2}, {"torch.cuda", 2}, {"torch.cuda", 3}};
    EXPECT_EQ(flagged(m), want) << target_name(t);
    EXPECT_TRUE(fails_check(m)) << target_name(t);
  }
  FileMigration npu = migrate_source("f.py", src, N);
  EXPECT_EQ(flagged(npu), (std::vector<std::pair<std::string, size_t>>{{"torch.cuda", 3}}));
  const std::string out = output(npu, src);
  EXPECT_NE(out.find("from torch_npu.npu import synchronize, Event as Ev\n"), std::string::npos) << out;
  EXPECT_NE(out.find("from torch_npu.npu import manual_seed\n"), std::string::npos) << out;
}

TEST(HiddenCuda, CudaMethodReferencesAreFlagged) {
  const std::string src =
      "import torch\n"
      "model = torch.nn.Linear(2, 2)\n"
      "move = model.cuda\n"           // 3: called below
      "move()\n"
      "fn = torch.Tensor.cuda\n"      // 5
      "use_cuda = args.cuda\n"        // an argparse flag: not a method
      "if args.cuda:\n"
      "    pass\n";
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    EXPECT_EQ(flagged(m), (std::vector<std::pair<std::string, size_t>>{{"cuda-method-reference", 3},
                                                                         {"cuda-method-reference", 5}}))
        << target_name(t);
    EXPECT_TRUE(fails_check(m));
  }
}

TEST(HiddenCuda, CudaOnlyLibrariesAreFlagged) {
  const std::string src =
      "import ctypes\n"
      "import numpy as np\n"
      "from numba import cuda\n"                               // 3
      "import numba.cuda\n"                                    // 4
      "import pycuda.driver as drv\n"                          // 5
      "lib = ctypes.CDLL(\"libcudart.so\")\n"                  // 6
      "nvrtc = ctypes.cdll.LoadLibrary('libnvrtc.so.12')\n"    // 7
      "libc = ctypes.CDLL(\"libc.so.6\")\n"
      "@cuda.jit\n"
      "def add(a):\n"
      "    a[cuda.grid(1)] += 1\n"
      "numba.cuda.synchronize()\n";                            // 12
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    EXPECT_EQ(flagged(m), (std::vector<std::pair<std::string, size_t>>{{"numba-cuda", 3}, {"numba-cuda", 4},
                                                                         {"pycuda", 5}, {"cuda-library", 6},
                                                                         {"cuda-library", 7}, {"numba-cuda", 12}}))
        << target_name(t);
    EXPECT_TRUE(fails_check(m));
    EXPECT_EQ(m.status, FileStatus::Unchanged);
  }
}

TEST(HiddenCuda, DictionaryMapLocationValuesBecomeTheTargetsDevice) {
  const std::string src = "import torch\nckpt = torch.load(\"x.pt\", map_location={\"cuda:1\": \"cuda:0\", \"cuda:2\": 'cuda'})\n";
  FileMigration cpu = migrate_source("f.py", src, C);
  EXPECT_EQ(cpu.migrated, "import torch\nckpt = torch.load(\"x.pt\", map_location={\"cuda:1\": \"cpu\", \"cuda:2\": 'cpu'})\n");
  FileMigration npu = migrate_source("f.py", src, N);
  EXPECT_NE(npu.migrated.find("{\"cuda:1\": \"npu:0\", \"cuda:2\": 'npu'}"), std::string::npos) << npu.migrated;
  FileMigration agnostic = migrate_source("f.py", src, A);
  EXPECT_NE(agnostic.migrated.find("{\"cuda:1\": (f\"{_accel_device.type}:0\" if _accel_device.type != \"cpu\" else "
                                   "\"cpu\"), \"cuda:2\": _accel_device.type}"),
            std::string::npos)
      << agnostic.migrated;
  for (const FileMigration* m : {&cpu, &npu, &agnostic}) EXPECT_TRUE(m->findings.empty());
}

TEST(HiddenCuda, AmpCallWithUnpackedArgumentsKeepsTheImport) {
  const std::string src =
      "import torch\n"
      "from torch.cuda.amp import autocast, GradScaler\n"
      "cfg = {\"enabled\": True}\n"
      "scaler = GradScaler(**cfg)\n"
      "with autocast(**cfg):\n"
      "    pass\n";
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    EXPECT_EQ(flagged(m), (std::vector<std::pair<std::string, size_t>>{{"torch.cuda.amp.GradScaler", 4},
                                                                         {"torch.cuda.amp.autocast", 5}}))
        << target_name(t);
    EXPECT_EQ(m.status, FileStatus::Unchanged) << target_name(t) << "\n" << m.migrated;
  }
  // Without unpacking the import is renamed and every call gets its device.
  FileMigration ok = migrate_source("f.py", "from torch.cuda.amp import autocast\nwith autocast(True):\n    pass\n", C);
  EXPECT_EQ(ok.migrated, "from torch.amp import autocast\nwith autocast(device_type=\"cpu\", enabled=True):\n    pass\n");
}

TEST(HiddenCuda, AFlaggedCudaCallIsLeftExactlyAsWritten) {
  const std::string src =
      "import torch\n"
      "a = x.cuda(non_blocking=True, device=0)\n"
      "b = x.cuda(*args, device=0)\n";
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    EXPECT_EQ(flagged(m), (std::vector<std::pair<std::string, size_t>>{{"tensor.cuda", 2}, {"tensor.cuda", 3}}))
        << target_name(t);
    EXPECT_EQ(m.status, FileStatus::Unchanged) << target_name(t) << "\n" << m.migrated;
  }
}

TEST(HiddenCuda, AnOptionalTorchImportStaysOptional) {
  const std::string src =
      "try:\n"
      "    import torch\n"
      "except ImportError:\n"
      "    torch = None\n"
      "\n"
      "def to_dev(x):\n"
      "    return x.cuda() if torch is not None else x\n"
      "\n"
      "print(to_dev([1]))\n";
  FileMigration agnostic = migrate_source("f.py", src, A);
  EXPECT_EQ(agnostic.migrated,
            "try:\n    import torch\nexcept ImportError:\n    torch = None\n"
            "_accel_device = (torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "
            "torch.device(\"cpu\")) if globals().get(\"torch\") is not None else None\n"
            "\ndef to_dev(x):\n    return x.to(_accel_device) if torch is not None else x\n\nprint(to_dev([1]))\n");
  FileMigration npu = migrate_source("f.py", src, N);
  EXPECT_EQ(npu.migrated,
            "try:\n    import torch\nexcept ImportError:\n    torch = None\n"
            "if globals().get(\"torch\") is not None: import torch_npu\n"
            "\ndef to_dev(x):\n    return x.to(\"npu\") if torch is not None else x\n\nprint(to_dev([1]))\n");
  // A plain import before it makes torch mandatory already: the usual placement.
  FileMigration plain = migrate_source("f.py", "import torch\ntry:\n    import torch.distributed\nexcept ImportError:\n    pass\ny = x.cuda()\n", A);
  EXPECT_NE(plain.migrated.find("import torch\n_accel_device = torch.accelerator"), std::string::npos) << plain.migrated;
  for (const FileMigration* m : {&agnostic, &npu})
    EXPECT_EQ(migrate_source("f.py", m->migrated, m == &agnostic ? A : N).status, FileStatus::Unchanged);
}

}  // namespace
