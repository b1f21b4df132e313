// python/dump_torch.py against crosstrain: Python runs dumped through hooks must compare clean
// with themselves, show an injected perturbation or NaN as the first divergence, and the Python
// writer and the C++ DumpWriter must produce dumps that compare exact for the same tensors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/compare/dump_compare.h"
#include "tools/dump/dump_reader.h"
#include "tools/dump/dump_writer.h"
#include "tools/dump/element_decode.h"
#include "tools/dump/temp_dir.h"

using namespace crosstrain::dump;
using namespace crosstrain::compare;
using crosstrain::testing::TempDir;

namespace {

std::string python() { return CROSSTRAIN_PYTHON; }
std::string script() { return std::string(CROSSTRAIN_SOURCE_DIR) + "/python/dump_torch.py"; }

// One test runs the Python side once (five runs in parallel; most of their time is Python
// start-up) and checks each expectation in its own section: CTest runs every TEST in a process
// of its own, so a shared set-up would be paid once per test.
std::string dump_cmd(const TempDir& dir, const std::string& name, const std::string& extra) {
  // ResNet-18 on 48x48 inputs (2x2 maps in layer4), batch 4: small, yet enough values per channel
  // for batch norm to behave. Two steps, step 0 dumped.
  return python() + " " + script() +
         " --model resnet18 --image-size 48 --batch-size 4 --num-steps 2 --steps 0 --threads 1 --out " +
         (dir / name) + extra + " > " + (dir / name) + ".log 2>&1";
}

}  // namespace

TEST(PythonDumps, RunsCompareAsExpected) {
  TempDir dir("pyruns");
  const std::string cmd = "(" + dump_cmd(dir, "a", "") + ") & (" + dump_cmd(dir, "b", "") + ") & (" +
                          dump_cmd(dir, "perturbed", " --perturb layer3.0.conv1=1") + ") & (" +
                          dump_cmd(dir, "nan", " --inject-nan layer2.0") + ") & (" +
                          dump_cmd(dir, "bf16", " --precision bf16") + ") & wait";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  for (const char* name : {"a", "b", "perturbed", "nan", "bf16"})
    ASSERT_TRUE(is_dump_dir(dir / name)) << "python/dump_torch.py failed for " << name;
  {
    SCOPED_TRACE("same seed: clean and exact");
    auto r = compare_paths(dir / "a", dir / "b", {});
    EXPECT_TRUE(r.agree);
    EXPECT_GT(r.tensors.size(), 200u);  // forward, output gradients, parameter gradients, loss
    EXPECT_EQ(r.counts.exact, static_cast<int64_t>(r.tensors.size()));
    ASSERT_TRUE(r.loss.has_value());
    EXPECT_EQ(r.loss->steps.size(), 2u);
    EXPECT_EQ(r.loss->max_rel_diff, 0.0);
  }
  {
    SCOPED_TRACE("perturbed layer is the first divergence");
    auto r = compare_paths(dir / "a", dir / "perturbed", {});
    EXPECT_FALSE(r.agree);
    ASSERT_TRUE(r.first_divergence.has_value());
    EXPECT_EQ(r.tensors[*r.first_divergence].name, "forward/layer3.0.conv1");
    for (size_t i = 0; i < *r.first_divergence; ++i) EXPECT_TRUE(r.tensors[i].exact()) << r.tensors[i].name;
  }
  {
    SCOPED_TRACE("injected NaN is found");
    auto r = compare_paths(dir / "a", dir / "nan", {});
    EXPECT_FALSE(r.agree);
    ASSERT_TRUE(r.first_divergence.has_value());
    const auto& t = r.tensors[*r.first_divergence];
    EXPECT_EQ(t.name, "forward/layer2.0");
    EXPECT_NE(t.reason.find("NaN/Inf on one side only"), std::string::npos);
  }
  {
    SCOPED_TRACE("bf16 against fp32 warns but does not err");
    auto r = compare_paths(dir / "a", dir / "bf16", {});
    EXPECT_EQ(r.counts.error, 0) << (r.first_divergence ? r.tensors[*r.first_divergence].name + ": " +
                                                              r.tensors[*r.first_divergence].reason
                                                        : std::string());
    EXPECT_GT(r.counts.warn, 0);
    EXPECT_EQ(r.counts.exact, 0);
    EXPECT_TRUE(r.agree);
    CompareOptions strict;
    strict.strict = true;
    EXPECT_FALSE(compare_paths(dir / "a", dir / "bf16", strict).agree);
  }
}

// The same tensors written by the C++ DumpWriter and by the Python writer (same formula as
// reference_value() in python/dump_torch.py).
TEST(DumpFormatConformance, CppAndPythonWritersAgree) {
  TempDir dir("conformance");
  const std::string py_dump = dir / "py", cpp_dump = dir / "cpp";
  ASSERT_EQ(std::system((python() + " " + script() + " --format-check --out " + py_dump).c_str()), 0);
  const char* dtypes[] = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"};
  DumpWriter w;
  w.open(cpp_dump, DumpMode::Tensors, {"crosstrain", {{"precision", "fp32"}}, false});
  const size_t n = 3 * 5 * 7;
  for (int k = 0; k < 8; ++k) {
    const DType t = *parse_dtype(dtypes[k]);
    std::vector<unsigned char> bytes(n * dtype_size(t));
    for (size_t i = 0; i < n; ++i) {
      const int base = static_cast<int>((i * 37 + static_cast<size_t>(k) * 11) % 101);
      const double f = (base - 50) / 8.0;
      switch (t) {
        case DType::Float32: reinterpret_cast<float*>(bytes.data())[i] = static_cast<float>(f); break;
        case DType::Float64: reinterpret_cast<double*>(bytes.data())[i] = f; break;
        case DType::Float16: reinterpret_cast<uint16_t*>(bytes.data())[i] = float_to_half(static_cast<float>(f)); break;
        case DType::BFloat16: reinterpret_cast<uint16_t*>(bytes.data())[i] = float_to_bfloat16(static_cast<float>(f)); break;
        case DType::Int64: reinterpret_cast<int64_t*>(bytes.data())[i] = base - 50; break;
        case DType::Int32: reinterpret_cast<int32_t*>(bytes.data())[i] = base - 50; break;
        case DType::UInt8: bytes[i] = static_cast<uint8_t>(base); break;
        case DType::Bool: bytes[i] = base % 3 == 0; break;
      }
    }
    w.write_tensor(0, std::string("check.") + dtypes[k], RecordKind::Forward, t, {3, 5, 7}, bytes.data());
  }
  w.write_scalar(0, RecordKind::Loss, 1.25);
  w.log_loss(0, 1.25);
  w.log_loss(1, std::nan(""));
  w.close();

  auto r = compare_paths(cpp_dump, py_dump, {});
  EXPECT_TRUE(r.agree);
  ASSERT_EQ(r.tensors.size(), 9u);
  for (const auto& t : r.tensors) {
    EXPECT_TRUE(t.exact()) << t.name;
    ASSERT_TRUE(t.a && t.b);
    EXPECT_EQ(t.a->dtype, t.b->dtype) << t.name;
    EXPECT_EQ(t.a->stored_dtype, t.b->stored_dtype) << t.name;
    // Statistics: C++ one-pass chunked sums against numpy's float64 reductions.
    EXPECT_NEAR(*t.a->stats.mean, *t.b->stats.mean, 1e-12) << t.name;
    EXPECT_NEAR(*t.a->stats.norm, *t.b->stats.norm, 1e-12 * *t.b->stats.norm) << t.name;
    EXPECT_EQ(*t.a->stats.max, *t.b->stats.max) << t.name;
  }
  CompareOptions by_stats;
  by_stats.stats_only = true;
  EXPECT_TRUE(compare_paths(cpp_dump, py_dump, by_stats).agree);
  // numpy loads every file the C++ writer wrote, as is, with the shape and dtype the index says.
  const std::string check =
      python() + " -c \"import json,numpy as np,sys\n"
                 "lines=open('" + cpp_dump + "/index.jsonl').read().splitlines()[1:]\n"
                 "for l in map(json.loads,lines):\n"
                 "  a=np.load('" + cpp_dump + "/'+l['file'])\n"
                 "  assert list(a.shape)==l['shape'] and str(a.dtype)==l['stored_dtype'], l\n"
                 "  b=np.load('" + py_dump + "/'+l['file'])\n"
                 "  assert (a==b).all(), l['name']\n\"";
  EXPECT_EQ(std::system(check.c_str()), 0);
}
