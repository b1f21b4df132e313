// Inputs that must neither hang nor exhaust memory: pipes and devices given as trace files, gzip
// files inflating past the limit, names hundreds of megabytes long.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "tools/analyze/op_names.h"
#include "tools/analyze/trace_reader.h"

using namespace crosstrain::analyze;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("crosstrain_reader_hardening_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_gzip(const fs::path& p, const std::string& content) {
  gzFile gz = gzopen(p.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, content.data(), static_cast<unsigned>(content.size())), static_cast<int>(content.size()));
  gzclose(gz);
}

std::string error_of(const std::string& path, const ReadOptions& opt = {}) {
  try {
    read_trace_file(path, opt);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST(ReaderHardening, FifoAndDevicesAreRefusedWithoutBlocking) {
  auto dir = temp_dir("fifo");
  auto fifo = dir / "trace.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(error_of(fifo.string()).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of("/dev/zero").find("not a regular file"), std::string::npos);
  EXPECT_THROW(read_traces(fifo.string()), std::runtime_error);
  EXPECT_LT(seconds_since(t0), 5.0);
  fs::remove_all(dir);
}

TEST(ReaderHardening, GzipInflatedSizeLimit) {
  auto dir = temp_dir("gzip");
  std::string doc = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]})";
  doc += std::string(4096 - doc.size(), ' ');  // exactly 4096 bytes inflated
  write_gzip(dir / "t.json.gz", doc);
  ReadOptions at_limit;
  at_limit.max_inflated_bytes = 4096;
  EXPECT_EQ(read_trace_file((dir / "t.json.gz").string(), at_limit).spans.size(), 1u);
  ReadOptions below;
  below.max_inflated_bytes = 4095;  // the file is limit + 1
  std::string err = error_of((dir / "t.json.gz").string(), below);
  EXPECT_NE(err.find("inflates to more than 4095 bytes"), std::string::npos) << err;
  EXPECT_NE(err.find("--max-inflated-mib"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(ReaderHardening, GzipTrailerIsNotTrusted) {
  // A trailer claiming 4 GiB must not make the reader allocate 4 GiB for a tiny stream.
  auto dir = temp_dir("trailer");
  write_gzip(dir / "t.json.gz", R"({"traceEvents": []})");
  {
    FILE* f = std::fopen((dir / "t.json.gz").c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, -4, SEEK_END);
    unsigned char big[4] = {0xff, 0xff, 0xff, 0xff};
    std::fwrite(big, 1, 4, f);
    std::fclose(f);
  }
  // The forged size also fails zlib's length check: an error, quickly, not an allocation.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(error_of((dir / "t.json.gz").string()).empty());
  EXPECT_LT(seconds_since(t0), 5.0);
  fs::remove_all(dir);
}

TEST(ReaderHardening, HugeNamesClassifyInBoundedTime) {
  std::string huge(200u << 20, 'a');  // 200 MB of a letter every needle starts with
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(op_type_of(huge), OpType::Other);
  EXPECT_FALSE(is_communication_name(huge));
  EXPECT_FALSE(is_data_loading_name(huge));
  EXPECT_FALSE(is_autograd_wrapper_name(huge));
  EXPECT_LT(seconds_since(t0), 1.0);
  // Through the whole reader: a 32 MB name in a trace.
  std::string doc = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": ")" + std::string(32u << 20, 'a') +
                    R"(", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]})";
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(parse_trace(doc, "huge.json").spans.size(), 1u);
  EXPECT_LT(seconds_since(t0), 10.0);
}

TEST(OperatorNames, WholeWordsAndAutogradWrappers) {
  EXPECT_EQ(op_type_of("aten::expand"), OpType::Other);
  EXPECT_EQ(op_type_of("aten::exp"), OpType::Elementwise);
  EXPECT_EQ(op_type_of("aten::log_softmax"), OpType::Elementwise);
  EXPECT_EQ(op_type_of("aten::add_"), OpType::Elementwise);
  EXPECT_EQ(op_type_of("aten::addmm"), OpType::Matmul);
  EXPECT_EQ(op_type_of("aten::mm"), OpType::Matmul);
  EXPECT_EQ(op_type_of("AddBackward0"), OpType::Other);
  EXPECT_EQ(op_type_of("autograd::engine::evaluate_function: AddBackward0"), OpType::Other);
  EXPECT_EQ(op_type_of("autograd::engine::evaluate_function: ConvolutionBackward0"), OpType::Other);
  EXPECT_EQ(op_type_of("aten::convolution_backward"), OpType::Conv);
  EXPECT_TRUE(is_host_sync_name("cudaStreamSynchronize"));
  EXPECT_TRUE(is_host_sync_name("aten::item"));
  EXPECT_FALSE(is_host_sync_name("cudaEventQuery"));  // polls and returns
  EXPECT_FALSE(is_host_sync_name("cudaStreamQuery"));
  EXPECT_TRUE(is_pageable_copy_name("Memcpy DtoH (Device -> Pageable)"));
  EXPECT_FALSE(is_pageable_copy_name("Memcpy HtoD (Pinned -> Device)"));
}
