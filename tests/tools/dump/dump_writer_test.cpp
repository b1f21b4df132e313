#include "tools/dump/dump_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "tools/dump/dump_reader.h"
#include "tools/dump/element_decode.h"
#include "tools/dump/npy.h"
#include "tools/dump/temp_dir.h"

using namespace crosstrain::dump;
using crosstrain::testing::TempDir;

TEST(DumpWriter, TensorsModeWritesIndexFilesAndLossLog) {
  TempDir dir("writer");
  DumpWriter w;
  DumpWriterOptions opt;
  opt.meta = {{"precision", "fp32"}};
  w.open(dir.str(), DumpMode::Tensors, opt);
  std::vector<float> act = {1, -1, 2, -2};
  std::vector<uint16_t> bf = {float_to_bfloat16(0.5f), float_to_bfloat16(-4.0f)};
  w.log_loss(0, 2.5);
  auto& r0 = w.write_tensor(0, "layer1.0.relu", RecordKind::Forward, DType::Float32, {2, 2}, act.data());
  EXPECT_EQ(r0.name, "forward/layer1.0.relu");
  EXPECT_EQ(r0.seq, 0);
  // The same module called again in the step gets a suffix; a name with its prefix is kept.
  EXPECT_EQ(w.write_tensor(0, "layer1.0.relu", RecordKind::Forward, DType::Float32, {4}, act.data()).name,
            "forward/layer1.0.relu#1");
  EXPECT_EQ(w.write_tensor(0, "grad_output/layer1.0", RecordKind::GradOutput, DType::BFloat16, {2}, bf.data()).name,
            "grad_output/layer1.0");
  EXPECT_EQ(w.write_scalar(0, RecordKind::Loss, 2.5).name, "loss");
  w.log_loss(1, std::nan(""));
  EXPECT_EQ(w.write_tensor(1, "layer1.0.relu", RecordKind::Forward, DType::Float32, {4}, act.data()).name,
            "forward/layer1.0.relu");  // suffixes restart every step
  w.close();

  auto idx = read_dump(dir.str());
  EXPECT_TRUE(idx.problems.empty());
  EXPECT_EQ(idx.version, kDumpFormatVersion);
  EXPECT_EQ(idx.mode, DumpMode::Tensors);
  EXPECT_EQ(idx.meta["precision"], "fp32");
  ASSERT_EQ(idx.records.size(), 5u);
  const auto& g = idx.records[2];
  EXPECT_EQ(g.dtype, DType::BFloat16);
  EXPECT_EQ(g.stored_dtype, DType::Float32);
  EXPECT_DOUBLE_EQ(*g.stats.min, -4.0);
  auto arr = NpyArray::open(dir / g.file);
  EXPECT_EQ(arr.dtype(), DType::Float32);
  EXPECT_EQ(static_cast<const float*>(arr.data())[0], 0.5f);
  EXPECT_EQ(idx.records[3].shape.size(), 0u);
  ASSERT_EQ(idx.loss.points.size(), 2u);
  EXPECT_DOUBLE_EQ(idx.loss.points[0].loss, 2.5);
  EXPECT_TRUE(std::isnan(idx.loss.points[1].loss));
}

TEST(DumpWriter, StatsModeWritesNoTensorFiles) {
  TempDir dir("writer");
  DumpWriter w;
  w.open(dir.str(), DumpMode::Stats);
  std::vector<double> v = {3, 4};
  auto& r = w.write_tensor(0, "fc.weight", RecordKind::ParamGrad, DType::Float64, {2}, v.data());
  EXPECT_TRUE(r.file.empty());
  EXPECT_DOUBLE_EQ(*r.stats.norm, 5.0);
  w.close();
  EXPECT_FALSE(std::filesystem::exists(dir / "tensors"));
  EXPECT_EQ(read_dump(dir.str()).records.size(), 1u);
}

TEST(DumpWriter, RefusesToMixDumpsAndMisuse) {
  TempDir dir("writer");
  {
    DumpWriter w;
    w.open(dir.str(), DumpMode::Tensors);
    float x = 1;
    w.write_tensor(0, "a", RecordKind::Forward, DType::Float32, {1}, &x);
    EXPECT_THROW(w.write_tensor(0, "a", RecordKind::Forward, DType::Float32, {-1}, &x), std::invalid_argument);
    EXPECT_THROW(w.write_tensor(0, "a", RecordKind::Forward, DType::Float32, {2}, nullptr), std::invalid_argument);
    EXPECT_THROW(w.write_scalar(0, RecordKind::Loss, 1.0, DType::Int64), std::invalid_argument);
  }  // closed by the destructor
  DumpWriter again;
  EXPECT_THROW(again.open(dir.str(), DumpMode::Tensors), std::runtime_error);
  DumpWriterOptions opt;
  opt.overwrite = true;
  again.open(dir.str(), DumpMode::Stats, opt);
  EXPECT_FALSE(std::filesystem::exists(dir / "tensors"));
  again.close();
  DumpWriter closed;
  float x = 1;
  EXPECT_THROW(closed.write_tensor(0, "a", RecordKind::Forward, DType::Float32, {1}, &x), std::logic_error);
  EXPECT_THROW(closed.open("/proc/crosstrain_cannot_create", DumpMode::Stats), std::runtime_error);
}

// The index and loss log are an interface (python/dump_torch.py and other readers parse them):
// these lines must not change by accident. Keys come out sorted.
TEST(DumpWriter, GoldenIndexAndLossLines) {
  TempDir dir("writer");
  DumpWriter w;
  w.open(dir.str(), DumpMode::Tensors);
  std::vector<float> v = {1, -1, 2, -2};
  w.write_tensor(3, "layer1.0.conv1", RecordKind::Forward, DType::Float32, {2, 2}, v.data());
  w.log_loss(3, 2.5);
  w.log_loss(4, -std::numeric_limits<double>::infinity());
  w.close();
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  EXPECT_EQ(read(dir / "index.jsonl"),
            "{\"format\":\"crosstrain-dump\",\"meta\":{},\"mode\":\"tensors\",\"producer\":\"crosstrain\",\"version\":1}\n"
            "{\"dtype\":\"float32\",\"file\":\"tensors/step3/000000-forward_layer1.0.conv1.npy\",\"kind\":\"forward\","
            "\"name\":\"forward/layer1.0.conv1\",\"seq\":0,\"shape\":[2,2],\"stats\":{\"inf_count\":0,\"max\":2.0,"
            "\"mean\":0.0,\"min\":-2.0,\"nan_count\":0,\"norm\":3.1622776601683795},\"step\":3,"
            "\"stored_dtype\":\"float32\"}\n");
  EXPECT_EQ(read(dir / "loss.jsonl"), "{\"loss\":2.5,\"step\":3}\n{\"loss\":\"-inf\",\"step\":4}\n");
  EXPECT_TRUE(std::filesystem::exists(dir / "tensors/step3/000000-forward_layer1.0.conv1.npy"));
}
