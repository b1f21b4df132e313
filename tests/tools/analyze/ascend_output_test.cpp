// The Ascend profiler's side files (kernel_details.csv in both column generations, op_statistic.csv,
// step_trace_time.csv, communication.json, communication_matrix.json) and the cluster views.
#include "tools/analyze/ascend_output.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace crosstrain::analyze;
namespace fs = std::filesystem;

namespace {
const std::string kRank0 = std::string(CROSSTRAIN_SOURCE_DIR) +
                           "/tests/data/traces/ascend_pt/node0_1001_20240101_ascend_pt/ASCEND_PROFILER_OUTPUT";
const std::string kRank1 = std::string(CROSSTRAIN_SOURCE_DIR) +
                           "/tests/data/traces/ascend_pt/node0_1002_20240101_ascend_pt/ASCEND_PROFILER_OUTPUT";

const NamedTotal* named(const std::vector<NamedTotal>& v, const std::string& n) {
  for (const auto& e : v)
    if (e.name == n) return &e;
  return nullptr;
}
}  // namespace

TEST(AscendOutput, KernelDetailsBothColumnGenerations) {
  for (const auto& dir : {kRank0, kRank1}) {  // rank 1 has the older op_summary-style columns
    auto a = read_ascend_output(dir);
    EXPECT_TRUE(a.has_kernel_details) << dir;
    ASSERT_NE(named(a.cores, "AI_CPU"), nullptr) << dir;
    EXPECT_DOUBLE_EQ(named(a.cores, "AI_CPU")->total_us, 250);
    EXPECT_EQ(named(a.cores, "AI_VECTOR_CORE")->count, 2);
    EXPECT_DOUBLE_EQ(named(a.cores, "AI_VECTOR_CORE")->total_us, 50);
    EXPECT_TRUE(a.notes.empty()) << a.notes.front();
  }
  EXPECT_DOUBLE_EQ(named(read_ascend_output(kRank1).cores, "HCCL")->total_us, 500);
}

TEST(AscendOutput, StrayTabsQuotesAndBom) {
  auto dir = fs::temp_directory_path() / "crosstrain_ascend_tabs";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "kernel_details.csv")
      << "\xEF\xBB\xBFName,Type,Accelerator Core,Start Time(us),Duration(us),Input Shapes\r\n"
      << "MatMulV2,MatMulV2,AI_CORE\t,1700000000000400.000\t,12.5\t,\"8,8;8,8\"\r\n"
      << "MatMulV2,MatMulV2,AI_CORE,1700000000000500.000\t,\t7.5,\"8,8;8,8\"\r\n";
  auto a = read_ascend_output(dir.string());
  ASSERT_TRUE(a.has_kernel_details);
  ASSERT_EQ(a.kernels.size(), 1u);
  EXPECT_EQ(a.kernels[0].count, 2);
  EXPECT_DOUBLE_EQ(a.kernels[0].total_us, 20);
  ASSERT_NE(named(a.cores, "AI_CORE"), nullptr);
  EXPECT_FALSE(a.has_step_trace);  // absent files are just absent
  fs::remove_all(dir);
}

TEST(AscendOutput, StepTraceOpStatisticCommunication) {
  auto a = read_ascend_output(kRank1);
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(a.steps[0].computing_us, 500);
  EXPECT_DOUBLE_EQ(a.steps[0].comm_not_overlapped_us, 500);
  EXPECT_DOUBLE_EQ(a.steps[0].free_us, 400);
  ASSERT_FALSE(a.op_statistic.empty());
  EXPECT_EQ(a.op_statistic[0].name, "NonZero (AI_CPU)");
  ASSERT_EQ(a.collectives.size(), 1u);  // "Total Op Info" is a sum, not a collective
  EXPECT_NEAR(a.comm_wait_ms, 0.35, 1e-9);
  ASSERT_FALSE(a.links.empty());
  EXPECT_EQ(a.links[0].link, "0-1");
  EXPECT_DOUBLE_EQ(a.links[0].bandwidth_gbps, 2.0);
}

TEST(AscendOutput, ClusterSlowRankAndSlowLink) {
  std::string text = render_ascend_console({read_ascend_output(kRank0), read_ascend_output(kRank1)}, {0, 1});
  // Rank 1 waits 0.35 ms for rank 0: rank 0 is the straggler.
  EXPECT_NE(text.find("Slow rank: 0"), std::string::npos) << text;
  auto links = text.find("Slowest links");
  ASSERT_NE(links, std::string::npos) << text;
  EXPECT_NE(text.find("2.00 GB/s", links), std::string::npos) << text;
}

TEST(AscendOutput, UnreadableSideFileIsANote) {
  auto dir = fs::temp_directory_path() / "crosstrain_ascend_bad";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "communication.json") << "{\"step1\": [truncated";
  auto a = read_ascend_output(dir.string());
  EXPECT_FALSE(a.has_communication);
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("communication.json"), std::string::npos);
  fs::remove_all(dir);
}
