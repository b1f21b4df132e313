// The Ascend profiler's side files (kernel_details.csv in both column generations, op_statistic.csv,
// step_trace_time.csv, communication.json, communication_matrix.json) and the cluster views.
#include "tools/analyze/ascend_output.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

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

// RFC 4180 as spreadsheets and Python's csv module write it: a quoted cell may hold commas, doubled
// quotes and newlines; a quote inside an unquoted cell is an ordinary character. Numbers are plain
// decimals: hex, inf, nan, a sign or text leave their row out, and the note names the cells.
TEST(AscendOutput, CsvFollowsRfc4180AndNamesBadCells) {
  auto dir = fs::temp_directory_path() / "crosstrain_ascend_rfc4180";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "kernel_details.csv", std::ios::binary)
      << "Name,Type,Accelerator Core,Start Time(us),Duration(us),Input Shapes\r\n"
      << "Mat\"Mul,MatMul,AI_CORE,1.0,10.5,\"8,8\"\r\n"               // a stray quote: literal
      << "\"Add \"\"fused\"\"\",Add,AI_VECTOR_CORE,2.0,4.5,\"8,8;\n8,8\"\r\n"  // doubled quotes, newline in a cell
      << "Relu,Relu,AI_VECTOR_CORE,3.0,0x10,\"8\"\n"                 // hex
      << "Relu,Relu,AI_VECTOR_CORE,3.0,inf,\"8\"\n"
      << "Relu,Relu,AI_VECTOR_CORE,3.0,-2.5,\"8\"\n"
      << "Relu,Relu,AI_VECTOR_CORE,3.0,nan,\"8\"\n"
      << "Relu,Relu,AI_VECTOR_CORE,3.0,1e999,\"8\"\n"
      << "Relu,Relu,AI_VECTOR_CORE,3.0,2.0,\"8\"\n";
  auto a = read_ascend_output(dir.string());
  ASSERT_TRUE(a.has_kernel_details);
  std::map<std::string, KernelStats> by_name;
  for (const auto& k : a.kernels) by_name[k.name] = k;
  ASSERT_EQ(by_name.size(), 3u);
  EXPECT_DOUBLE_EQ(by_name["Mat\"Mul"].total_us, 10.5);
  EXPECT_DOUBLE_EQ(by_name["Add \"fused\""].total_us, 4.5);
  EXPECT_EQ(by_name["Relu"].count, 1);  // only the good row
  EXPECT_DOUBLE_EQ(by_name["Relu"].total_us, 2.0);
  ASSERT_NE(named(a.cores, "AI_VECTOR_CORE"), nullptr);
  EXPECT_DOUBLE_EQ(named(a.cores, "AI_VECTOR_CORE")->total_us, 6.5);
  ASSERT_EQ(a.notes.size(), 1u);
  const std::string& note = a.notes[0];
  EXPECT_NE(note.find("5 bad cell(s), those rows left out"), std::string::npos) << note;
  EXPECT_NE(note.find("record 4 Duration(us) '0x10': not a decimal number"), std::string::npos) << note;
  EXPECT_NE(note.find("record 5 Duration(us) 'inf'"), std::string::npos) << note;
  EXPECT_NE(note.find("record 6 Duration(us) '-2.5': negative"), std::string::npos) << note;
  fs::remove_all(dir);
}

// A quoted cell that never closes swallows the rest of the file; the note says where it opened.
TEST(AscendOutput, UnterminatedQuoteIsNoted) {
  auto dir = fs::temp_directory_path() / "crosstrain_ascend_unterminated";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "step_trace_time.csv") << "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free\n"
                                            << "1,100,20,5,25,3\n"
                                            << "\"2,100,20,5,25,3\n"
                                            << "3,100,20,5,25,3\n";
  auto a = read_ascend_output(dir.string());
  ASSERT_TRUE(a.has_step_trace);
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_EQ(a.steps[0].step, "1");
  ASSERT_EQ(a.notes.size(), 2u);  // where the quote opened, and the record it made unreadable
  EXPECT_NE(a.notes[0].find("record 3 opens a quoted cell that never closes"), std::string::npos) << a.notes[0];
  EXPECT_NE(a.notes[1].find("record 3 Computing '': empty"), std::string::npos) << a.notes[1];
  fs::remove_all(dir);
}
