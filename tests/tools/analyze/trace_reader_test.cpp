#include "tools/analyze/trace_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "report/json_scanner.h"
#include "test_support.h"

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

// `--profile DIR` of train and bench writes DIR/cycle<k>/rank<r>.pt.trace.json, as run does; the
// folders they wrote before (DIR/trace_cycle<k>..., DIR/rank<r>/trace_cycle<k>..., bench's
// DIR/<precision>/trace_cycle<k>...) are read as that layout: the same runs and ranks.
TEST(TraceReader, OldTrainLayoutsReadAsTheRunLayout) {
  namespace fs = std::filesystem;
  const fs::path root = crosstrain::testing::scratch_dir("trace_layouts");
  auto put = [&](const fs::path& file) {
    fs::create_directories(file.parent_path());
    fs::copy_file(kData + "crosstrain_cpu.json", file);  // no distributedInfo: the rank comes from names
  };
  struct Layout {
    std::string name;
    std::vector<std::string> files;
  };
  const std::vector<Layout> layouts = {
      {"run", {"cycle0/rank0.pt.trace.json", "cycle0/rank1.pt.trace.json", "cycle1/rank0.pt.trace.json",
               "cycle1/rank1.pt.trace.json"}},
      {"old_ranks", {"rank0/trace_cycle0.pt.trace.json", "rank0/trace_cycle1.pt.trace.json",
                     "rank1/trace_cycle0.pt.trace.json", "rank1/trace_cycle1.pt.trace.json"}},
      {"run_one", {"cycle0/rank0.pt.trace.json", "cycle1/rank0.pt.trace.json"}},
      {"old_one", {"trace_cycle0.pt.trace.json", "trace_cycle1.pt.trace.json"}},
      {"bench", {"amp/cycle0/rank0.pt.trace.json", "fp32/cycle0/rank0.pt.trace.json"}},
      {"old_bench", {"amp/trace_cycle0.pt.trace.json", "fp32/trace_cycle0.pt.trace.json"}},
  };
  // (run folder relative to the layout's root, rank) of each trace, in the order read.
  std::map<std::string, std::vector<std::pair<std::string, int>>> seen;
  for (const auto& l : layouts) {
    for (const auto& f : l.files) put(root / l.name / f);
    for (const auto& t : read_traces((root / l.name).string()))
      seen[l.name].emplace_back(fs::relative(run_folder_of(t.path), root / l.name).string(), t.rank);
  }
  using Runs = std::vector<std::pair<std::string, int>>;
  EXPECT_EQ(seen["run"], (Runs{{"cycle0", 0}, {"cycle0", 1}, {"cycle1", 0}, {"cycle1", 1}}));
  EXPECT_EQ(seen["old_ranks"], seen["run"]);
  EXPECT_EQ(seen["run_one"], (Runs{{"cycle0", 0}, {"cycle1", 0}}));
  EXPECT_EQ(seen["old_one"], seen["run_one"]);
  EXPECT_EQ(seen["bench"], (Runs{{"amp/cycle0", 0}, {"fp32/cycle0", 0}}));
  EXPECT_EQ(seen["old_bench"], seen["bench"]);
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

// pytorch/pytorch#136180: torch 2.4 wrote garbage bytes into a python_function name, e.g.
// "torch/_inductor/config.py(0): " followed by control characters. The trace is still read.
TEST(TraceReader, ControlBytesInANameDoNotRejectTheTrace) {
  const std::string doc =
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"torch/_inductor/config.py(0): "
      "\x01\x7f\x13\", \"pid\": 1, \"tid\": 1, \"ts\": 10, \"dur\": 5},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 11, \"dur\": 2}]}";
  Trace t = parse_trace(doc, "t.json");
  ASSERT_EQ(t.spans.size(), 2u);
  EXPECT_EQ(count_kind(t, SpanKind::CpuOp), 1u);
  bool kept = false;
  for (const auto& s : t.spans) kept |= t.strings.str(s.name) == "torch/_inductor/config.py(0): \x01\x7f\x13";
  EXPECT_TRUE(kept);
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

namespace {

void expect_same_trace(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.spans.size(), b.spans.size());
  for (size_t i = 0; i < a.spans.size(); ++i) {
    EXPECT_NEAR(a.spans[i].ts, b.spans[i].ts, 1e-6) << i;
    EXPECT_EQ(a.spans[i].dur, b.spans[i].dur) << i;
    EXPECT_EQ(a.strings.str(a.spans[i].name), b.strings.str(b.spans[i].name)) << i;
    EXPECT_EQ(a.strings.str(a.spans[i].shapes), b.strings.str(b.spans[i].shapes)) << i;
    EXPECT_EQ(a.spans[i].kind, b.spans[i].kind) << i;
    EXPECT_EQ(a.tracks[a.spans[i].track].key, b.tracks[b.spans[i].track].key) << i;
    EXPECT_EQ(a.spans[i].correlation, b.spans[i].correlation) << i;
  }
  EXPECT_EQ(a.flows.size(), b.flows.size());
  EXPECT_EQ(a.memory.size(), b.memory.size());
  EXPECT_EQ(a.process_names, b.process_names);
  EXPECT_EQ(a.rank, b.rank);
}

}  // namespace

TEST(TraceReader, TwoThreadParseEqualsOneThreadParse) {
  ReadOptions sequential{SIZE_MAX}, parallel{0};
  for (auto name : {"torch_cpu_small.json", "kineto_gpu_hand.json", "legacy_autograd.json", "ascend_trace_view.json",
                    "crosstrain_cpu.json.gz"}) {
    SCOPED_TRACE(name);
    expect_same_trace(read_trace_file(kData + name, sequential), read_trace_file(kData + name, parallel));
  }
}

TEST(TraceReader, TwoThreadParseSurvivesAWrongSplitGuess) {
  // The middle of this document is a string that looks like an event boundary.
  std::string filler(200, 'x');
  std::string doc = R"({"traceEvents": [{"ph": "X", "ts": 1, "dur": 2, "name": "a"}, {"ph": "X", "ts": 3, "dur": 1, "name": ")" +
                    filler + "}, {" + filler + R"("}, {"ph": "X", "ts": 5, "dur": 1, "name": "c"}]})";
  ReadOptions parallel{0};
  expect_same_trace(parse_trace(doc, "a.json"), parse_trace(doc, "a.json", parallel));
  // Errors are found and placed the same way.
  std::string bad = doc.substr(0, doc.size() - 30) + R"(, "oops"]})";
  std::string e1, e2;
  try {
    parse_trace(bad, "b.json");
  } catch (const std::runtime_error& e) {
    e1 = e.what();
  }
  try {
    parse_trace(bad, "b.json", parallel);
  } catch (const std::runtime_error& e) {
    e2 = e.what();
  }
  EXPECT_FALSE(e1.empty());
  EXPECT_EQ(e1, e2);
}
