#include "tools/analyze/trace_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tools/analyze/json_scanner.h"

using namespace crosstrain::analyze;

namespace {

const std::string kData = std::string(CROSSTRAIN_SOURCE_DIR) + "/tests/data/traces/";

std::string error_of(const std::string& doc) {
  try {
    parse_trace(doc, "bad.json");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

size_t count_kind(const Trace& t, SpanKind k) {
  size_t n = 0;
  for (const auto& s : t.spans) n += s.kind == k;
  return n;
}

}  // namespace

TEST(TraceReader, ReadsTorchProfilerCpuTrace) {
  Trace t = read_trace_file(kData + "torch_cpu_small.json");
  EXPECT_EQ(t.format, TraceFormat::Kineto);
  EXPECT_GT(count_kind(t, SpanKind::CpuOp), 300u);
  EXPECT_EQ(count_kind(t, SpanKind::Kernel), 0u);
  EXPECT_GT(t.memory.size(), 100u);
  EXPECT_GT(t.flows.size(), 10u);  // fwdbwd links
}

TEST(TraceReader, ClassifiesKinetoGpuTrace) {
  Trace t = read_trace_file(kData + "kineto_gpu_hand.json");
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.world_size, 2);
  EXPECT_EQ(t.device_compute_major, 8);
  EXPECT_EQ(t.device_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(count_kind(t, SpanKind::Kernel), 3u);
  EXPECT_EQ(count_kind(t, SpanKind::Communication), 2u);
  EXPECT_EQ(count_kind(t, SpanKind::Memcpy), 2u);
  EXPECT_EQ(count_kind(t, SpanKind::Memset), 1u);
  EXPECT_EQ(count_kind(t, SpanKind::Runtime), 9u);
  EXPECT_EQ(t.time_base_us, 1700000000001000);
  // Relative times keep exact microseconds despite the epoch base.
  EXPECT_DOUBLE_EQ(t.spans.front().ts, 0.0);
}

TEST(TraceReader, DetectsLegacyAndAscendArrays) {
  Trace legacy = read_trace_file(kData + "legacy_autograd.json");
  EXPECT_EQ(legacy.format, TraceFormat::LegacyAutograd);
  EXPECT_EQ(count_kind(legacy, SpanKind::Kernel), 2u);
  EXPECT_EQ(count_kind(legacy, SpanKind::CpuOp), 2u);
  EXPECT_EQ(count_kind(legacy, SpanKind::Annotation), 1u);

  Trace ascend = read_trace_file(kData + "ascend_trace_view.json");
  EXPECT_EQ(ascend.format, TraceFormat::Ascend);
  EXPECT_EQ(count_kind(ascend, SpanKind::Kernel), 2u);
  EXPECT_EQ(count_kind(ascend, SpanKind::Communication), 1u);
  EXPECT_EQ(count_kind(ascend, SpanKind::Runtime), 2u);
  EXPECT_EQ(count_kind(ascend, SpanKind::Other), 1u);  // Overlap Analysis is derived, not measured
}

TEST(TraceReader, GzipMatchesPlain) {
  Trace plain = read_trace_file(kData + "crosstrain_cpu.json");
  Trace gz = read_trace_file(kData + "crosstrain_cpu.json.gz");
  ASSERT_EQ(plain.spans.size(), gz.spans.size());
  for (size_t i = 0; i < plain.spans.size(); ++i) EXPECT_EQ(plain.spans[i].ts, gz.spans[i].ts);
}

TEST(TraceReader, FolderOfRanksInRankOrder) {
  auto traces = read_traces(kData + "ranks");
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(traces[0].rank, 0);
  EXPECT_EQ(traces[1].rank, 1);
}

TEST(TraceReader, TruncatedFileNamesFileAndOffset) {
  std::ifstream in(kData + "crosstrain_cpu.json");
  std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t cut : {doc.size() / 3, doc.size() / 2, doc.size() - 3}) {
    std::string err = error_of(doc.substr(0, cut));
    EXPECT_NE(err.find("bad.json: byte "), std::string::npos) << err;
    EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  }
}

TEST(TraceReader, RejectsWrongSchemaMissingFieldsAndAbsurdNumbers) {
  EXPECT_NE(error_of("").find("empty file"), std::string::npos);
  EXPECT_NE(error_of(R"({"foo": 1})").find("no \"traceEvents\""), std::string::npos);
  EXPECT_NE(error_of("42").find("not a trace"), std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": {}})").find("not an array"), std::string::npos);
  EXPECT_NE(error_of(R"([{"ph": "X", "ts": 1, "name": "a"}])").find("without \"dur\""), std::string::npos);
  EXPECT_NE(error_of(R"([{"ph": "X", "dur": 1}])").find("without \"ts\""), std::string::npos);
  EXPECT_NE(error_of(R"([{"name": "x", "ts": 1}])").find("without \"ph\""), std::string::npos);
  EXPECT_NE(error_of(R"([{"ph": "X", "ts": 1, "dur": -5}])").find("absurd duration"), std::string::npos);
  EXPECT_NE(error_of(R"([{"ph": "X", "ts": 1e300, "dur": 5}])").find("absurd timestamp"), std::string::npos);
  EXPECT_NE(error_of(R"([{"ph": "X", "ts": "soon", "dur": 5}])").find("expected a number"), std::string::npos);
  EXPECT_NE(error_of(R"([{"ph": "X", "ts": 1, "dur": 5}] trailing)").find("after the end"), std::string::npos);
  std::string err = error_of("[{\"ph\": \"X\",\n \"ts\": 1, \"dur\": 5, \"pid\": [}]");
  EXPECT_NE(err.find("bad.json: byte 40"), std::string::npos) << err;
}

TEST(TraceReader, MissingAndCorruptFilesAreRuntimeErrors) {
  EXPECT_THROW(read_traces(kData + "no_such_trace.json"), std::runtime_error);
  auto dir = std::filesystem::temp_directory_path() / "crosstrain_reader_test";
  std::filesystem::create_directories(dir);
  auto gz = (dir / "broken.json.gz").string();
  {
    std::ofstream out(gz, std::ios::binary);
    out << "\x1f\x8b\x08\x00garbage that is not deflate";
  }
  EXPECT_THROW(read_trace_file(gz), std::runtime_error);
  auto empty_dir = dir / "empty";
  std::filesystem::create_directories(empty_dir);
  EXPECT_THROW(read_traces(empty_dir.string()), std::runtime_error);
}
