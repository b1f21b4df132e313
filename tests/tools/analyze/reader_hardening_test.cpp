// Inputs that must neither hang nor exhaust memory: pipes and devices given as trace files, gzip
// files inflating past the limit, names hundreds of megabytes long.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tools/analyze/analysis.h"
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

// Operators nested 50,000 deep on one thread, and 50,000 launches (ac2g flows) from points where
// the innermost operators have already ended: each flow lands in an operator somewhere up the
// stack. Walking up one parent at a time is quadratic (minutes at this size); the call-tree ladder
// and bottom-up totals keep it to a fraction of a second. The answers are checked, not just the time.
TEST(ReaderHardening, DeepNestingWithManyFlowsIsNotQuadratic) {
  const int depth = 50000, flows = 50000;
  std::string doc = R"({"traceEvents": [)";
  doc.reserve(size_t{24} << 20);
  doc += R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": )" +
         std::to_string(4 * depth) + "}";
  // Operator i spans [i, 2 * depth - i]; names alternate so no two nest as one redispatch.
  for (int i = 0; i < depth; ++i)
    doc += R"(, {"ph": "X", "cat": "cpu_op", "name": "aten::)" + std::string(i % 2 ? "a" : "b") +
           R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(i) + R"(, "dur": )" + std::to_string(2 * depth - 2 * i) +
           "}";
  // Flow k leaves at t = depth + 1.5 + j (j spread over [0, depth - 3]), when operator
  // depth - 2 - j (ending at depth + 2 + j) is the innermost one still running, and starts a 1 us
  // kernel at 3 * depth + 2k.
  std::vector<int> expected_op(flows);
  for (int k = 0; k < flows; ++k) {
    const int j = static_cast<int>(static_cast<int64_t>(k) * (depth - 3) / flows);
    expected_op[static_cast<size_t>(k)] = depth - 2 - j;
    const std::string id = std::to_string(k + 1), kts = std::to_string(3 * depth + 2 * k);
    char ts[32];
    std::snprintf(ts, sizeof ts, "%d.5", depth + 1 + j);
    doc += R"(, {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": )" + id + R"(, "pid": 1, "tid": 1, "ts": )" + ts + "}";
    doc += R"(, {"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": )" + id + R"(, "pid": 0, "tid": 7, "ts": )" +
           kts + "}";
    doc += R"(, {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )" + kts + R"(, "dur": 1})";
  }
  doc += "]}";
  auto t0 = std::chrono::steady_clock::now();
  auto a = analyze_trace(parse_trace(doc, "deep.json"));
  const double seconds = seconds_since(t0);
  EXPECT_EQ(a.kernel_count, flows);
  // Every kernel charged to the operator its flow left from: operators take turns by name, so the
  // two rows split the kernels by the parity of their operator.
  int64_t odd = 0;
  for (int op : expected_op) odd += op % 2;
  double a_us = 0, b_us = 0, b_total = 0;
  for (const auto& o : a.operators) {
    if (o.name == "aten::a") a_us = o.device_self_us;
    if (o.name == "aten::b") b_us = o.device_self_us, b_total = o.device_total_us;
  }
  EXPECT_DOUBLE_EQ(a_us, static_cast<double>(odd));
  EXPECT_DOUBLE_EQ(b_us, static_cast<double>(flows - odd));
  // Device totals add up the stack: operator j holds the kernels of every operator at or below it.
  double expected_b_total = 0;
  for (int op : expected_op) expected_b_total += static_cast<double>(op / 2 + 1);  // even ops 0, 2, ... <= op
  EXPECT_DOUBLE_EQ(b_total, expected_b_total);
  EXPECT_LT(seconds, 5.0) << "analysis took " << seconds << " s";
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
  // torch 1.8-1.9 named most nodes without the version digit.
  EXPECT_TRUE(is_autograd_wrapper_name("CudnnConvolutionBackward"));
  EXPECT_TRUE(is_autograd_wrapper_name("TBackward"));
  EXPECT_EQ(op_type_of("CudnnConvolutionBackward"), OpType::Other);
  EXPECT_EQ(op_type_of("AddmmBackward"), OpType::Other);
  EXPECT_FALSE(is_autograd_wrapper_name("Backward"));
  EXPECT_FALSE(is_autograd_wrapper_name("nn.Module: ConvBackward"));
  EXPECT_EQ(op_type_of("aten::cudnn_convolution_backward"), OpType::Conv);
  EXPECT_TRUE(is_host_sync_name("cudaStreamSynchronize"));
  EXPECT_TRUE(is_host_sync_name("aten::item"));
  EXPECT_FALSE(is_host_sync_name("cudaEventQuery"));  // polls and returns
  EXPECT_FALSE(is_host_sync_name("cudaStreamQuery"));
  EXPECT_TRUE(is_pageable_copy_name("Memcpy DtoH (Device -> Pageable)"));
  EXPECT_FALSE(is_pageable_copy_name("Memcpy HtoD (Pinned -> Device)"));
}
