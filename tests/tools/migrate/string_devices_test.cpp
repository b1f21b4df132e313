// CUDA written as strings: device strings built from pieces ("cuda:" + str(i), joins, formats
// with a "cuda" argument) are rewritten whole or flagged, never left for --check to pass.
#include "tools/migrate/file_migration.h"
#include "tools/migrate/migration_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace crosstrain::migrate;
using namespace crosstrain::migrate::testing;

namespace {

const std::string kDefinition =
    "_accel_device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device(\"cpu\")\n";
const std::string kWrapEnd = ".replace(\"cuda\", _accel_device.type, 1) if _accel_device.type != \"cpu\" else \"cpu\")";

struct Case {
  const char* name;
  Target target;
  std::string input;
  std::string expected;
};
std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }
const Target A = Target::DeviceAgnostic, N = Target::Npu, C = Target::Cpu;

std::vector<Case> cases() {
  return {
      {"concatenated_map_location_agnostic", A,
       "import torch\nckpt = torch.load(p, map_location=\"cuda:\" + str(rank % torch.cuda.device_count()))\n",
       "import torch\n" + kDefinition +
           "ckpt = torch.load(p, map_location=((\"cuda:\" + str(rank % max(1, torch.accelerator.device_count())))" +
           kWrapEnd + ")\n"},
      {"concatenated_map_location_cpu", C, "ckpt = torch.load(p, map_location=\"cuda:\" + str(rank))\n",
       "ckpt = torch.load(p, map_location=\"cpu\")\n"},
      {"concatenated_to_npu", N, "import torch\ny = x.to('cuda:' + str(i))\n",
       "import torch\ny = x.to(('cuda:' + str(i)).replace(\"cuda\", \"npu\", 1))\n"},
      {"concatenated_pieces_agnostic", A, "import torch\ndevice = \"cuda\" + \":\" + str(local_rank)\n",
       "import torch\n" + kDefinition + "device = ((\"cuda\" + \":\" + str(local_rank))" + kWrapEnd + "\n"},
      {"joined_cpu", C, "d = torch.device(\":\".join([\"cuda\", str(i)]))\ne = \"\".join((\"cuda:\", str(i)))\nx = x.to(e)\n",
       "d = torch.device(\"cpu\")\ne = \"cpu\"\nx = x.to(e)\n"},
      {"format_with_cuda_argument_in_device_position_cpu", C, "y = x.to(\"{}:{}\".format(\"cuda\", i))\n",
       "y = x.to(\"cpu\")\n"},
      {"percent_with_cuda_argument_cpu", C, "y = x.to(\"%s:%d\" % (\"cuda\", i))\n", "y = x.to(\"cpu\")\n"},
      {"fstring_prefix_cpu", C, "y = x.to(f\"cuda{suffix}\")\n", "y = x.to(\"cpu\")\n"},
      // Legacy CUDA tensor types: the cast, then the move .cuda() makes.
      {"tensor_type_string_agnostic", A, "import torch\nx = y.type(\"torch.cuda.FloatTensor\")\n",
       "import torch\n" + kDefinition + "x = y.type(torch.float32).to(_accel_device)\n"},
      {"tensor_type_attribute_cpu", C, "import torch\nh = model.type(torch.cuda.HalfTensor)\n",
       "import torch\nh = model.type(torch.float16).to(\"cpu\")\n"},
      {"tensor_type_keyword_npu", N, "import torch\ndef f(y):\n    return y.type(dtype='torch.cuda.LongTensor')\n",
       "import torch\ndef f(y):\n    return y.type(torch.int64).to(\"npu\")\n"},
      {"default_tensor_type_agnostic", A, "import torch\ntorch.set_default_tensor_type(\"torch.cuda.FloatTensor\")\nx = torch.zeros(2)\n",
       "import torch\n" + kDefinition +
           "torch.set_default_dtype(torch.float32); torch.set_default_device(_accel_device)\nx = torch.zeros(2)\n"},
      {"default_tensor_type_attribute_cpu", C, "import torch as th\nif use_gpu:\n    th.set_default_tensor_type(th.cuda.DoubleTensor)\n",
       "import torch as th\nif use_gpu:\n    th.set_default_dtype(th.float64); th.set_default_device(\"cpu\")\n"},
      {"cpu_tensor_types_are_left", A, "import torch\ntorch.set_default_tensor_type(torch.DoubleTensor)\nx = y.type('torch.FloatTensor')\n",
       "import torch\ntorch.set_default_tensor_type(torch.DoubleTensor)\nx = y.type('torch.FloatTensor')\n"},
      {"messages_are_not_devices", A, "print(\"cuda: \" + msg)\nlog(\"running on %s\" % name)\n",
       "print(\"cuda: \" + msg)\nlog(\"running on %s\" % name)\n"},
  };
}

class StringDevice : public ::testing::TestWithParam<Case> {};

TEST_P(StringDevice, RewritesWholeAndIsIdempotent) {
  const Case& c = GetParam();
  FileMigration first = migrate_source("f.py", c.input, c.target);
  ASSERT_NE(first.status, FileStatus::SyntaxError) << first.detail;
  ASSERT_NE(first.status, FileStatus::RewriteFailed) << first.detail;
  EXPECT_TRUE(first.findings.empty()) << first.findings[0].rule->id << " " << first.findings[0].api;
  std::string output = first.status == FileStatus::Migrated ? first.migrated : c.input;
  EXPECT_EQ(output, c.expected);
  FileMigration second = migrate_source("f.py", output, c.target);
  EXPECT_EQ(second.status, FileStatus::Unchanged) << "second run changed:\n" << second.migrated;
  EXPECT_TRUE(second.findings.empty());
}

INSTANTIATE_TEST_SUITE_P(Builds, StringDevice, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(StringDevice, CudaPiecesThatAreNotRewrittenAreFlagged) {
  const std::string src =
      "import torch\n"
      "prefix = \"cuda:\"\n"                              // 2: a prefix kept in a name
      "name = \"{}:{}\".format(\"cuda\", rank)\n"         // 3: a device built outside a device position
      "template = 'cuda:{}'\n"                            // 4: a template kept for later
      "label = str(rank) + \"cuda\"\n"                    // 5
      "ok = dev == \"cuda:\" + str(rank)\n"               // a comparison: left alone
      "table = {\"cuda:\": 1}\n";                         // a table: left alone
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    std::vector<std::pair<std::string, size_t>> want = {{"cuda-string", 2}, {"cuda-string", 3}, {"cuda-string", 4},
                                                        {"cuda-string", 5}};
    if (t == N) want.emplace_back("cuda-test", 6);
    EXPECT_EQ(flagged(m), want) << target_name(t);
    EXPECT_EQ(m.status, FileStatus::Unchanged) << target_name(t) << "\n" << m.migrated;
  }
}

TEST(StringDevice, APieceDeepInsideALongChainIsFlaggedNotLost) {
  std::string src = "d = \"cuda:\" + str(rank)";
  for (int i = 0; i < 300; ++i) src += " + str(" + std::to_string(i) + ")";
  src += "\n";
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    EXPECT_EQ(flagged(m), (std::vector<std::pair<std::string, size_t>>{{"cuda-string", 1}})) << target_name(t);
  }
}

TEST(LegacyTensorType, FlaggedWhereTheRewriteWouldNotBeTheSame) {
  const std::string src =
      "import torch\n"
      "torch.set_default_tensor_type('torch.cuda.FloatTensor')\n"  // 2: torch.Tensor() below ignores set_default_device
      "w = torch.nn.Parameter(torch.Tensor(3, 4))\n"
      "TYPE = \"torch.cuda.HalfTensor\"\n"                         // 4: a name kept for later
      "z = w.type(torch.cuda.FloatTensor, non_blocking=True)\n"    // 5: more arguments
      "ok = w.type() == 'torch.cuda.FloatTensor'\n"                // a test: left alone
      "torch.set_default_tensor_type(torch.cuda.LongTensor)\n";    // 7: raises on CUDA too: not a floating type
  for (Target t : {A, N, C}) {
    FileMigration m = migrate_source("f.py", src, t);
    std::vector<std::pair<std::string, size_t>> want = {
        {"legacy-tensor-type-unproven", 2}, {"legacy-tensor-type-unproven", 4}, {"torch.cuda", 5}, {"torch.cuda", 7}};
    EXPECT_EQ(flagged(m), want) << target_name(t);
    EXPECT_EQ(m.status, FileStatus::Unchanged) << target_name(t) << "\n" << m.migrated;
  }
}

}  // namespace
