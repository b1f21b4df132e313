// Source lines and step phases on a GPU-shaped trace with the call sites `crosstrain run --profile`
// writes beside it (no GPU here: the recordings of tests/cli/run_profile_test.cpp are CPU ones).
// Every number below is derived by hand from the timeline in make_trace().
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "kineto_trace_writer.h"
#include "test_support.h"
#include "tools/analyze/advisor.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/trace_reader.h"

namespace fs = std::filesystem;
using namespace crosstrain::analyze;
using crosstrain::analyze::testing::KinetoTraceWriter;

namespace {

constexpr long long kBase = 1'000'000'000'000LL;  // baseTimeNanoseconds

// One step, 0-1000 us, of a script whose lines are train.py:78 (the loop), 79 (x.to(device), a
// pageable copy), 80 (the model: a matmul, and its backward on the autograd thread), 81
// (torch.add on CPU tensors: a fallback) and 84 (loss.item(): a sync).
std::string make_trace() {
  KinetoTraceWriter w;
  w.base_time_ns(kBase).compute_major(8).step("ProfilerStep#1", 0, 1000);
  w.python("torch/utils/data/dataloader.py(700): __next__", 0, 18)
      .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 15);
  w.python("<built-in method to of Tensor object at 0x1>", 20, 75).op("aten::copy_", 25, 65);
  w.launch(30, 5, "Memcpy HtoD (Pageable -> Device)", 40, 40, "gpu_memcpy");
  w.python("nn.Module: Net_0", 100, 300).python("torch/nn/modules/linear.py(125): forward", 105, 290);
  w.op("aten::mm", 110, 90).launch(120, 10, "gemm_kernel", 150, 200).flow("fwdbwd", 's', 1, 110);
  w.python("<built-in method add of type object at 0x2>", 410, 90).op("aten::add", 415, 80);
  w.op_on(2, "autograd::engine::evaluate_function: MmBackward0", 600, 100).op_on(2, "MmBackward0", 605, 90);
  w.op_on(2, "aten::mm", 610, 80).launch(620, 5, "gemm_bwd_kernel", 650, 30, "kernel", 7, 2).flow("fwdbwd", 'f', 1, 605, 2);
  w.python("<built-in method item of Tensor object at 0x3>", 800, 100).op("aten::item", 805, 90);
  w.op("aten::_local_scalar_dense", 806, 88).runtime("cudaStreamSynchronize", 810, 80);
  return w.json();
}

std::string ns(double us) { return std::to_string(kBase + static_cast<long long>(us * 1000)); }

std::string call_sites() {
  return R"J({"format": "crosstrain-call-sites", "version": 1, "cpus": 4,
    "dataloaders": [{"index": 0, "num_workers": 0, "pin_memory": false, "persistent_workers": false,
                     "prefetch_factor": null, "batch_size": 32, "dataset": "ImageFolder", "iterators": 1,
                     "made_at": {"file": "train.py", "line": 30, "text": "loader = DataLoader(data, batch_size=32)"}}],
    "files": [["train.py", "user", "/home/me/train.py"], ["timm/layers/mlp.py", "library", "/x/timm/layers/mlp.py"]],
    "calls": [[)J" + ns(0) + R"J(, 0, 78, "<module>"], [)J" + ns(20) + R"J(, 0, 79, "<module>"],
              [)J" + ns(100) + R"J(, 0, 80, "<module>"], [)J" + ns(410) + R"J(, 0, 81, "<module>"],
              [)J" + ns(800) + R"J(, 0, 84, "<module>"]],
    "lines": [[0, 78, "for x, y in loader:"], [0, 79, "x = x.to(device)"], [0, 80, "out = model(x)"],
              [0, 81, "y = torch.add(out, 1)"], [0, 84, "print(loss.item())"]]})J";
}

TraceAnalysis analyze_folder(const fs::path& dir, const std::string& sources, std::vector<std::string>* notes = nullptr) {
  std::ofstream(dir / "rank0.pt.trace.json") << make_trace();
  if (!sources.empty()) std::ofstream(dir / "rank0.pt.trace.sources.json") << sources;
  auto traces = read_traces(dir.string(), {}, notes);
  EXPECT_EQ(traces.size(), 1u);  // the side file is not taken for a trace
  auto a = analyze_trace(traces.at(0));
  a.findings = run_advisor(a);
  return a;
}

const Finding* finding(const TraceAnalysis& a, const std::string& rule) {
  for (const auto& f : a.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

}  // namespace

TEST(SourceLines, FindingsAndOperatorsNameTheLinesBehindThem) {
  const auto a = analyze_folder(crosstrain::testing::scratch_dir("source_lines"), call_sites());
  ASSERT_TRUE(a.source_lines);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"host_sync", "train.py:84"}, {"cpu_fallback", "train.py:81"}, {"pageable_copy", "train.py:79"},
      {"device_idle", "train.py:80"}};
  for (const auto& [rule, where] : expected) {
    const Finding* f = finding(a, rule);
    ASSERT_NE(f, nullptr) << rule;
    ASSERT_FALSE(f->sources.empty()) << rule;
    EXPECT_EQ(f->sources.front().where, where) << rule;
  }
  EXPECT_EQ(finding(a, "host_sync")->sources.front().code, "print(loss.item())");
  // The device idled 70 us before the forward matmul and 300 us before its backward kernel, whose
  // operator on the autograd thread takes the forward's line through the fwdbwd flow.
  EXPECT_DOUBLE_EQ(finding(a, "device_idle")->sources.front().time_us, 370);
  for (const auto& o : a.operators)
    if (o.name == "aten::mm") {
      ASSERT_EQ(o.sources.size(), 1u);
      EXPECT_EQ(o.sources[0].where, "train.py:80");
      EXPECT_EQ(o.sources[0].count, 2);  // forward and backward
      EXPECT_EQ(o.sources[0].code, "out = model(x)");
    }
  // A device trace's reads are host syncs (host_sync fired); host_read is for host-only traces.
  EXPECT_EQ(finding(a, "host_read"), nullptr);
  ASSERT_EQ(a.host_reads.size(), 1u);
  EXPECT_EQ(a.host_reads[0].where, "train.py:84");
  ASSERT_EQ(a.loaders.size(), 1u);
  EXPECT_EQ(a.loaders[0].made_at, "train.py:30");
  EXPECT_EQ(a.cpus, 4);
}

TEST(SourceLines, StepPhasesAndDeviceIdleByPhase) {
  const auto a = analyze_folder(crosstrain::testing::scratch_dir("step_phases"), call_sites());
  ASSERT_EQ(a.steps.size(), 1u);
  const auto& s = a.steps[0];
  auto phase = [&](StepPhase p) { return s.phase_us[static_cast<size_t>(p)]; };
  auto idle = [&](StepPhase p) { return s.idle_us[static_cast<size_t>(p)]; };
  EXPECT_NEAR(phase(StepPhase::DataWait), 15, 1e-6);
  EXPECT_NEAR(phase(StepPhase::ToDevice), 65, 1e-6);    // aten::copy_ launched the HtoD copy
  EXPECT_NEAR(phase(StepPhase::Forward), 300, 1e-6);    // the nn.Module span
  EXPECT_NEAR(phase(StepPhase::Backward), 100, 1e-6);   // the engine's evaluate_function
  EXPECT_NEAR(phase(StepPhase::HostSync), 90, 1e-6);    // aten::item, outside the other phases
  EXPECT_NEAR(phase(StepPhase::Optimizer), 0, 1e-6);
  EXPECT_NEAR(phase(StepPhase::Other), 430, 1e-6);
  // Device busy 40 + 200 + 30 us; the 730 us idle by what the host did meanwhile.
  EXPECT_NEAR(idle(StepPhase::DataWait), 15, 1e-6);
  EXPECT_NEAR(idle(StepPhase::ToDevice), 25, 1e-6);
  EXPECT_NEAR(idle(StepPhase::Forward), 100, 1e-6);
  EXPECT_NEAR(idle(StepPhase::Backward), 70, 1e-6);
  EXPECT_NEAR(idle(StepPhase::HostSync), 90, 1e-6);
  EXPECT_NEAR(idle(StepPhase::Other), 430, 1e-6);
  EXPECT_NEAR(s.h2d_us, 40, 1e-6);
  EXPECT_EQ(s.h2d_copies, 1);
  EXPECT_TRUE(a.module_spans);
}

TEST(SourceLines, WithoutOrWithABrokenSideFileTheTraceIsAnalyzedWithoutLines) {
  const std::string bad_index = R"({"format": "crosstrain-call-sites", "version": 1, "files": [["train.py", "user"]],
                                    "calls": [[1, 5, 10]]})";
  for (const std::string& sources : {std::string(), std::string("{\"format\": \"crosstrain-call-sites\", \"calls\": [[1,"),
                                     bad_index, std::string("[1, 2, 3]")}) {
    std::vector<std::string> notes;
    const auto a = analyze_folder(crosstrain::testing::scratch_dir("no_lines"), sources, &notes);
    EXPECT_FALSE(a.source_lines) << sources;
    EXPECT_EQ(notes.size(), sources.empty() ? 0u : 1u) << sources;
    if (!notes.empty()) EXPECT_NE(notes[0].find("rank0.pt.trace.sources.json: not used"), std::string::npos) << notes[0];
    ASSERT_NE(finding(a, "host_sync"), nullptr);  // the trace's own findings are all there
    EXPECT_TRUE(finding(a, "host_sync")->sources.empty());
    for (const auto& o : a.operators) EXPECT_TRUE(o.sources.empty());
  }
}

TEST(SourceLines, ASideFileThatIsAPipeIsANoteNotAHang) {
  const auto dir = crosstrain::testing::scratch_dir("fifo_side_file");
  std::ofstream(dir / "rank0.pt.trace.json") << make_trace();
  ASSERT_EQ(::mkfifo((dir / "rank0.pt.trace.sources.json").c_str(), 0600), 0);
  std::vector<std::string> notes;
  auto traces = read_traces(dir.string(), {}, &notes);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_FALSE(traces[0].call_sites.present);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("not a regular file"), std::string::npos) << notes[0];
}

TEST(SourceLines, ARunFolderIsReadCycleByCycleWithRanksFromTheFileNames) {
  const auto dir = crosstrain::testing::scratch_dir("run_folder");
  for (const char* cycle : {"cycle0", "cycle1"}) {
    fs::create_directories(dir / cycle);
    for (const char* rank : {"rank0", "rank1"}) {
      std::ofstream(dir / cycle / (std::string(rank) + ".pt.trace.json")) << make_trace();
      std::ofstream(dir / cycle / (std::string(rank) + ".pt.trace.sources.json")) << call_sites();
    }
  }
  std::vector<std::string> notes;
  auto traces = read_traces(dir.string(), {}, &notes);
  EXPECT_TRUE(notes.empty()) << notes.front();
  ASSERT_EQ(traces.size(), 4u);
  for (size_t i = 0; i < traces.size(); ++i) {
    EXPECT_EQ(traces[i].rank, static_cast<int>(i % 2)) << traces[i].path;
    EXPECT_EQ(run_folder_of(traces[i].path), (dir / (i < 2 ? "cycle0" : "cycle1")).string());
    EXPECT_TRUE(traces[i].call_sites.present);
  }
}
