// Two runs of a 2-rank job on Ascend NPUs, at torch_npu profiler levels 0 and 1
// (tests/data/traces/make_ascend_runs.py), as folders: runs side by side, a database-only export,
// a summary file cut short.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tools/analyze/ascend_output.h"
#include "tools/analyze/trace_reader.h"

using namespace crosstrain::analyze;
namespace fs = std::filesystem;

namespace {

const std::string kRuns = std::string(CROSSTRAIN_SOURCE_DIR) + "/tests/data/traces/ascend_runs";

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
