// Two runs of a 2-rank job on Ascend NPUs, at torch_npu profiler levels 0 and 1
// (tests/data/traces/make_ascend_runs.py): HCCL's tasks on the communication stream ("Notify Wait",
// "SDMA", "Write Value"), the profiler's own step_trace_time.csv and kernel_details.csv, loss.item()
// waiting on the CANN process. The breakdown must agree with the profiler's, and syncs count once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tools/analyze/advisor.h"
#include "tools/analyze/analysis.h"
#include "tools/analyze/ascend_output.h"
#include "tools/analyze/trace_reader.h"

using namespace crosstrain::analyze;
namespace fs = std::filesystem;

namespace {

const std::string kRuns = std::string(CROSSTRAIN_SOURCE_DIR) + "/tests/data/traces/ascend_runs";

double cat(const StepBreakdown& s, StepCategory c) { return s.category_us[static_cast<size_t>(c)]; }

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("crosstrain_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

}  // namespace

TEST(AscendRuns, AFolderOfRunsIsReadRunByRun) {
  auto traces = read_traces(kRuns);
  ASSERT_EQ(traces.size(), 4u);
  const std::string level0 = kRuns + "/level0", level1 = kRuns + "/level1";
  EXPECT_EQ(run_folder_of(traces[0].path), level0);
  EXPECT_EQ(run_folder_of(traces[1].path), level0);
  EXPECT_EQ(run_folder_of(traces[2].path), level1);
  EXPECT_EQ(run_folder_of(traces[3].path), level1);
  EXPECT_EQ(traces[0].rank, 0);
  EXPECT_EQ(traces[1].rank, 1);
  EXPECT_EQ(traces[3].rank, 1);
}

// Computing, communication and their overlap from the trace agree with the profiler's own
// step_trace_time.csv, and compute-kernel time with kernel_details.csv, at both levels.
TEST(AscendRuns, BreakdownAgreesWithTheProfilersStepTraceTime) {
  for (const auto& trace : read_traces(kRuns)) {
    SCOPED_TRACE(trace.path);
    auto a = analyze_trace(trace);
    auto side = read_ascend_output(ascend_output_dir_of(trace.path));
    ASSERT_TRUE(side.has_step_trace);
    ASSERT_EQ(side.steps.size(), 3u);
    compare_with_trace(side, a);
    const AscendAgreement& g = side.agreement;
    EXPECT_EQ(g.steps, 3);
    EXPECT_NEAR(g.computing_trace_us, g.computing_csv_us, 0.03 * g.computing_csv_us);
    EXPECT_NEAR(g.comm_trace_us, g.comm_csv_us, 0.03 * g.comm_csv_us);
    EXPECT_NEAR(g.overlapped_trace_us, g.overlapped_csv_us, 0.03 * g.overlapped_csv_us);
    EXPECT_LT(g.worst, kAscendAgreementTolerance);
    // Compute kernels are the operators' tasks: kernel_details.csv's total.
    double details = 0;
    for (const auto& c : side.cores) details += c.total_us;
    EXPECT_NEAR(a.kernel_us, details, 1e-6 * details);
    ASSERT_FALSE(a.top_kernels.empty());
    for (const auto& k : a.top_kernels) EXPECT_TRUE(k.name != "Notify Wait" && k.name != "SDMA") << k.name;
    // Collectives are the HCCL operations (each call numbered: hcom_allReduce__560_0_1), not the
    // tasks they are made of.
    ASSERT_EQ(a.collectives.size(), 1u);
    EXPECT_EQ(a.collectives[0].name, "hcom_allReduce_");
    EXPECT_EQ(a.collectives[0].count, 3);
    // Mostly waiting for the other rank: the overlap is small, and the rule says so.
    EXPECT_LT(a.total.comm_overlapped_us / a.total.comm_us, 0.1);
    bool exposed = false;
    for (const auto& f : run_advisor(a)) exposed = exposed || f.rule == "comm_overlap";
    EXPECT_TRUE(exposed);
  }
}

// loss.item() each step: aten::item -> aten::_local_scalar_dense on the Python thread, and at
// level 1 the AscendCL@aclrtSynchronizeStream it makes, recorded on the CANN process under the
// same thread id. One wait per step, never more time than the step.
TEST(AscendRuns, ASyncOnTheCannProcessCountsOnceWithItsCaller) {
  for (const auto& trace : read_traces(kRuns)) {
    SCOPED_TRACE(trace.path);
    auto a = analyze_trace(trace);
    EXPECT_EQ(a.host_sync_count, 3);
    ASSERT_EQ(a.host_syncs.size(), 1u);
    EXPECT_EQ(a.host_syncs[0].name, "aten::item");
    EXPECT_GT(a.host_sync_us, 0);
    EXPECT_LT(a.host_sync_us, a.total.duration_us);
  }
}

// The profiler's database export alone: say so, and how to get the text export.
TEST(AscendRuns, DatabaseExportOnlySaysHowToExportText) {
  fs::path dir = scratch("ascend_db");
  fs::create_directories(dir / "node0_1_20260101_ascend_pt" / "ASCEND_PROFILER_OUTPUT");
  std::ofstream(dir / "node0_1_20260101_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db")
      << "SQLite format 3";
  try {
    read_traces(dir.string());
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("database export"), std::string::npos) << what;
    EXPECT_NE(what.find("export_type"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  fs::remove_all(dir);
}

// A communication.json cut short (the profiler still writing, a copy interrupted) is a summary
// that could not be read: a note, and the trace next to it is analyzed.
TEST(AscendRuns, TruncatedCommunicationJsonIsANote) {
  fs::path dir = scratch("ascend_truncated");
  const fs::path src = fs::path(kRuns) / "level1";
  fs::copy(src, dir, fs::copy_options::recursive);
  fs::path comm;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename() == "communication.json") comm = e.path();
  ASSERT_FALSE(comm.empty());
  fs::resize_file(comm, fs::file_size(comm) / 2);
  std::vector<std::string> notes;
  auto traces = read_traces(dir.string(), {}, &notes);
  EXPECT_EQ(traces.size(), 2u);
  auto side = read_ascend_output(comm.parent_path().string());
  EXPECT_FALSE(side.has_communication);
  EXPECT_TRUE(side.has_step_trace);
  ASSERT_EQ(side.notes.size(), 1u);
  EXPECT_NE(side.notes[0].find("communication.json: not valid JSON at byte"), std::string::npos) << side.notes[0];
  fs::remove_all(dir);
}
