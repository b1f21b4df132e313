// Where a "cuda" or "nccl" string may be rewritten: only in a device (or backend) position. Data
// that happens to read "cuda" (attribute names, Enum values, paths, messages) is left as written,
// and other positions are flagged, never silently converted.
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

TEST(StringPosition, DataThatReadsCudaIsLeftAloneAndNotFlagged) {
  const std::string src =
      "import argparse, glob, os\n"
      "from enum import Enum\n"
      "import torch\n"
      "class Backend(Enum):\n"
      "    CPU = \"cpu\"\n"
      "    CUDA = \"cuda\"\n"
      "    NCCL = \"nccl\"\n"
      "parser = argparse.ArgumentParser()\n"
      "parser.add_argument(\"--cuda\", action=\"store_true\")\n"
      "args = parser.parse_args()\n"
      "use_cuda = getattr(args, \"cuda\", False) and hasattr(args, 'cuda')\n"
      "setattr(args, \"cuda\", use_cuda)\n"
      "srcs = glob.glob(os.path.join(\"csrc\", \"cuda\", \"*.cpp\"))\n"
      "f = open(\"cuda\")\n"
      "print(\"cuda\", r\"cuda\")\n"
      "print(\"nccl\")\n"
      "logger.info(\"cuda:0\")\n";
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    EXPECT_EQ(m.status, FileStatus::Unchanged) << target_name(t) << "\n" << m.migrated;
    EXPECT_TRUE(m.findings.empty()) << target_name(t) << ": " << m.findings[0].rule->id << " line "
                                    << m.findings[0].line;
  }
}

TEST(StringPosition, OtherPositionsAreFlaggedNotRewritten) {
  const std::string src =
      "import torch\n"
      "name = \"cuda\"\n"                 // 2: a name never read as a device
      "x = foo(\"a\", \"cuda\")\n"        // 3: an argument of another function
      "t = (\"cpu\", \"cuda\")\n"         // 4
      "k = dict(kind=\"cuda:1\")\n"       // 5
      "b = [\"nccl\", \"gloo\"]\n"        // 6
      "m = 'cuda:{}'.format(i)\n";        // 7
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    std::vector<std::pair<std::string, size_t>> want = {{"cuda-string", 2}, {"cuda-string", 3}, {"cuda-string", 4},
                                                        {"cuda-string", 5}, {"nccl-string", 6}, {"cuda-string", 7}};
    EXPECT_EQ(flagged(m), want) << target_name(t);
    EXPECT_EQ(m.status, FileStatus::Unchanged) << target_name(t) << "\n" << m.migrated;
  }
}

TEST(StringPosition, DevicePositionsAreStillRewritten) {
  const std::string src =
      "import torch\n"
      "class Config:\n"
      "    device = \"cuda\"\n"
      "p.add_argument(\"--device\", default=\"cuda\")\n"
      "p.add_argument(\"--dist-backend\", default=\"nccl\")\n"
      "cfg[\"device\"] = \"cuda\"\n"
      "dev = \"cuda\"\n"
      "x = x.to(dev)\n"
      "def get_device():\n"
      "    return \"cuda\"\n"
      "mesh = init_device_mesh(\"cuda\", (2,))\n"
      "flags.DEFINE_string(\"base_device\", \"cuda\", \"where to run\")\n";
  const std::string want =
      "import torch\n"
      "class Config:\n"
      "    device = \"cpu\"\n"
      "p.add_argument(\"--device\", default=\"cpu\")\n"
      "p.add_argument(\"--dist-backend\", default=\"gloo\")\n"
      "cfg[\"device\"] = \"cpu\"\n"
      "dev = \"cpu\"\n"
      "x = x.to(dev)\n"
      "def get_device():\n"
      "    return \"cpu\"\n"
      "mesh = init_device_mesh(\"cpu\", (2,))\n"
      "flags.DEFINE_string(\"base_device\", \"cpu\", \"where to run\")\n";
  FileMigration m = migrate_source("f.py", src, C);
  EXPECT_TRUE(m.findings.empty()) << m.findings[0].rule->id << " line " << m.findings[0].line;
  EXPECT_EQ(output(m, src), want);
}

// `"cuda" if "cuda" in d else "cpu"`: test and result change together, or not at all.
TEST(StringPosition, ATypeDerivationChangesOnlyWhereItsResultIsADevice) {
  const std::string src = "import torch\nfoo(\"cuda\" if \"cuda\" in d else \"cpu\")\nx.to(\"cuda\" if \"cuda\" in d else \"cpu\")\n";
  FileMigration m = migrate_source("f.py", src, C);
  EXPECT_EQ(output(m, src),
            "import torch\nfoo(\"cuda\" if \"cuda\" in d else \"cpu\")\nx.to(\"cpu\" if \"cpu\" in d else \"cpu\")\n");
  EXPECT_EQ(flagged(m), (std::vector<std::pair<std::string, size_t>>{{"cuda-string", 2}}));
}

// `"cuda" ":0"` is the string "cuda:0": judged whole, never split into `_accel_device.type ":0"`.
TEST(StringPosition, ImplicitConcatenationIsOneString) {
  const std::string src =
      "import torch\n"
      "y = x.to(\"cuda\" \":1\")\n"
      "t = torch.load(p, map_location=(\"cuda\"\n"
      "                                \":0\"))\n"
      "z = x.to(\"cu\" \"da\")\n"
      "m = \"cuda\" \"x\"\n";
  FileMigration cpu = migrate_source("f.py", src, C);
  EXPECT_EQ(output(cpu, src),
            "import torch\ny = x.to(\"cpu\")\nt = torch.load(p, map_location=(\"cpu\"))\nz = x.to(\"cpu\")\n"
            "m = \"cuda\" \"x\"\n");
  EXPECT_TRUE(cpu.findings.empty());
  FileMigration npu = migrate_source("f.py", src, N);
  EXPECT_NE(output(npu, src).find("x.to(\"npu:1\")"), std::string::npos) << npu.migrated;
  FileMigration agnostic = migrate_source("f.py", src, A);
  ASSERT_EQ(agnostic.status, FileStatus::Migrated) << agnostic.detail;
  EXPECT_NE(agnostic.migrated.find("x.to((f\"{_accel_device.type}:1\" if _accel_device.type != \"cpu\" else \"cpu\"))"),
            std::string::npos)
      << agnostic.migrated;
  EXPECT_NE(agnostic.migrated.find("x.to(_accel_device.type)"), std::string::npos) << agnostic.migrated;
  // Outside a device position the concatenation is flagged whole and left as written.
  FileMigration kept = migrate_source("f.py", "import torch\nDEV = (\"cuda\"\n       \":0\")\n", A);
  EXPECT_EQ(kept.status, FileStatus::Unchanged) << kept.migrated;
  EXPECT_EQ(flagged(kept), (std::vector<std::pair<std::string, size_t>>{{"cuda-string", 2}}));
  FileMigration again = migrate_source("f.py", agnostic.migrated, A);
  EXPECT_EQ(again.status, FileStatus::Unchanged) << again.migrated;
}

}  // namespace
