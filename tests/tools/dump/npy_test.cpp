#include "tools/dump/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "tools/dump/element_decode.h"
#include "tools/dump/temp_dir.h"

using namespace crosstrain::dump;
using crosstrain::testing::TempDir;

namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A header of another format version, as numpy writes for version=(2,0)/(3,0).
std::string header_v(int major, const std::string& dict) {
  std::string body = dict;
  size_t total = 12 + body.size() + 1;
  body.append((total + 63) / 64 * 64 - total, ' ');
  body += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  uint32_t len = static_cast<uint32_t>(body.size());
  out.append(reinterpret_cast<const char*>(&len), 4);
  return out + body;
}

}  // namespace

TEST(Npy, HeaderMatchesNumpyByteForByte) {
  // numpy 2.x: np.save of float32 (2, 3) writes exactly this header (128 bytes, v1.0).
  std::string expected("\x93NUMPY\x01\x00v\x00", 10);
  expected += "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  expected.append(128 - expected.size() - 1, ' ');
  expected += '\n';
  EXPECT_EQ(npy_header(DType::Float32, {2, 3}), expected);
  EXPECT_NE(npy_header(DType::Int64, {5}).find("'shape': (5,)"), std::string::npos);
  EXPECT_NE(npy_header(DType::Bool, {}).find("'descr': '|b1', 'fortran_order': False, 'shape': ()"), std::string::npos);
  EXPECT_EQ(npy_header(DType::Float64, {1000, 1000, 1000}).size() % 64, 0u);
}

TEST(Npy, WriteThenReadEveryDtype) {
  TempDir dir("npy");
  std::vector<float> f = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -8.0f};
  write_npy(dir / "f.npy", DType::Float32, {2, 3}, f.data());
  auto a = NpyArray::open(dir / "f.npy");
  EXPECT_EQ(a.dtype(), DType::Float32);
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(a.data(), f.data(), sizeof(float) * 6), 0);

  std::vector<uint16_t> bf = {float_to_bfloat16(1.0f), float_to_bfloat16(-0.5f)};
  EXPECT_EQ(write_npy(dir / "bf.npy", DType::BFloat16, {2}, bf.data()), DType::Float32);
  auto b = NpyArray::open(dir / "bf.npy");
  EXPECT_EQ(b.dtype(), DType::Float32);
  EXPECT_EQ(static_cast<const float*>(b.data())[1], -0.5f);

  std::vector<int64_t> i64 = {1, -2, 3};
  write_npy(dir / "i.npy", DType::Int64, {3}, i64.data());
  EXPECT_EQ(static_cast<const int64_t*>(NpyArray::open(dir / "i.npy").data())[1], -2);
  uint8_t flags[3] = {1, 0, 1};
  write_npy(dir / "b.npy", DType::Bool, {3}, flags);
  EXPECT_EQ(NpyArray::open(dir / "b.npy").dtype(), DType::Bool);
  double scalar = 2.5;
  write_npy(dir / "s.npy", DType::Float64, {}, &scalar);
  auto s = NpyArray::open(dir / "s.npy");
  EXPECT_EQ(s.numel(), 1u);
  EXPECT_TRUE(s.shape().empty());
  write_npy(dir / "e.npy", DType::Float32, {0, 4}, nullptr);
  EXPECT_EQ(NpyArray::open(dir / "e.npy").numel(), 0u);
}

TEST(Npy, ReadsVersion2And3Headers) {
  TempDir dir("npy");
  float v[2] = {4.0f, 5.0f};
  for (int major : {2, 3}) {
    std::string bytes = header_v(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }");
    bytes.append(reinterpret_cast<const char*>(v), sizeof v);
    write_bytes(dir / "v.npy", bytes);
    auto a = NpyArray::open(dir / "v.npy");
    EXPECT_EQ(a.version(), major);
    EXPECT_EQ(static_cast<const float*>(a.data())[1], 5.0f);
  }
}

TEST(Npy, CorruptFilesGiveClearErrors) {
  TempDir dir("npy");
  float v[4] = {1, 2, 3, 4};
  write_npy(dir / "ok.npy", DType::Float32, {4}, v);
  const std::string good = read_bytes(dir / "ok.npy");
  auto expect_error = [&](const std::string& bytes, const std::string& needle) {
    write_bytes(dir / "bad.npy", bytes);
    try {
      NpyArray::open(dir / "bad.npy");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.npy"), std::string::npos) << e.what();
    }
  };
  expect_error(good.substr(0, good.size() - 3), "truncated data");
  expect_error(good.substr(0, 40), "truncated header");
  expect_error("hello world, not numpy", "bad magic");
  expect_error("", "too short");
  std::string s = good;
  s.replace(s.find("<f4"), 3, ">f4");
  expect_error(s, "big-endian");
  s = good;
  s.replace(s.find("False"), 5, "True ");
  expect_error(s, "Fortran");
  s = good;
  s.replace(s.find("<f4"), 3, "<c8");
  expect_error(s, "unsupported dtype");
  s = good;
  s.replace(s.find("(4,)"), 4, "(x,)");
  expect_error(s, "corrupt header");
  s = good;
  s[6] = 9;
  expect_error(s, "format version 9");
  EXPECT_THROW(NpyArray::open(dir / "missing.npy"), std::runtime_error);
  EXPECT_THROW(NpyArray::open(dir.str()), std::runtime_error);  // a directory
}
