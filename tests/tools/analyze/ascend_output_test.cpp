// The Ascend profiler's side files (kernel_details.csv in both column generations, op_statistic.csv,
// step_trace_time.csv, communication.json, communication_matrix.json) and the cluster views.
#include "tools/analyze/ascend_output.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

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

namespace {

// A copy of the two-rank fixture in a fresh folder; `edit` changes rank 1's communication.json.
struct TwoRanks {
  fs::path root;
  std::string rank0, rank1;
  explicit TwoRanks(const std::string& name) {
    root = fs::temp_directory_path() / ("crosstrain_ascend_" + name);
    fs::remove_all(root);
    fs::create_directories(root);
    rank0 = (root / "r0").string(), rank1 = (root / "r1").string();
    fs::copy(kRank0, rank0, fs::copy_options::recursive);
    fs::copy(kRank1, rank1, fs::copy_options::recursive);
  }
  ~TwoRanks() { fs::remove_all(root); }
  // Sets `key` of the one collective's "Communication Time Info" in `dir`'s communication.json.
  static void set_time(const std::string& dir, const char* key, const nlohmann::json& value) {
    const fs::path file = fs::path(dir) / "communication.json";
    nlohmann::json j = nlohmann::json::parse(std::ifstream(file));
    j["step1"]["collective"]["hcom_allReduce__123_0_1@1234"]["Communication Time Info"][key] = value;
    std::ofstream(file, std::ios::trunc) << j.dump(1);
  }
};

}  // namespace

// Rank 1 waits 0.35 ms, rank 0 0.05 ms: rank 0 is the straggler. A wait time that is not a finite
// non-negative number (msprof versions and hand edits write "0.4", null, true; a corrupt file -5,
// -1e308) was read as 0 and made rank 1 the straggler (or printed "Wait ratio -1000.0%"): it is
// left out with a note, and with one rank's waits incomplete there is no verdict.
TEST(AscendOutput, CommunicationFiguresThatAreNotNumbersAreLeftOutNotReadAsZero) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {"0.4", "'\"0.4\"': a string, not a number"}, {nullptr, "'null': null, not a number"},
      {true, "'true': true or false, not a number"}, {-5, "'-5': negative"},
      {-1e308, "negative"},                          {1e308, "implausibly large"},
      {2e9, "implausibly large"}};  // 23 days in ms
  for (const auto& [value, why] : cases) {
    TwoRanks t("comm_bad");
    TwoRanks::set_time(t.rank1, "Wait Time(ms)", value);
    const auto r1 = read_ascend_output(t.rank1);
    EXPECT_EQ(r1.comm_wait_left_out, 1) << value;
    EXPECT_EQ(r1.comm_wait_ms, 0) << value;
    EXPECT_EQ(r1.comm_elapse_left_out, 0) << value;
    EXPECT_DOUBLE_EQ(r1.comm_elapse_ms, 0.5) << value;
    ASSERT_EQ(r1.notes.size(), 1u) << value;
    EXPECT_NE(r1.notes[0].find("communication.json: 1 bad value(s), left out of the sums"), std::string::npos) << r1.notes[0];
    EXPECT_NE(r1.notes[0].find("hcom_allReduce__123_0_1@1234 Wait Time(ms)"), std::string::npos) << r1.notes[0];
    EXPECT_NE(r1.notes[0].find(why), std::string::npos) << r1.notes[0];
    const std::string text = render_ascend_console({read_ascend_output(t.rank0), r1}, {0, 1});
    EXPECT_EQ(text.find("Slow rank: 1"), std::string::npos) << text;
    EXPECT_EQ(text.find("Slow rank: 0"), std::string::npos) << text;
    EXPECT_NE(text.find("Slow rank: not given: fewer than two ranks have valid wait times (not judged: rank 1 (1 wait "
                        "time(s) left out)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("n/a (1 left out)"), std::string::npos) << text;
    EXPECT_EQ(text.find("-1000"), std::string::npos) << text;
    EXPECT_EQ(ascend_output_to_json(r1)["comm_left_out"]["wait"], 1);
  }
}

// The verdict is made from the ranks whose waits are valid; the one that is not is named.
TEST(AscendOutput, SlowRankIsJudgedOverTheRanksWithValidWaitTimes) {
  TwoRanks t("comm_three");
  const std::string rank2 = (t.root / "r2").string();
  fs::copy(t.rank1, rank2, fs::copy_options::recursive);
  TwoRanks::set_time(rank2, "Wait Time(ms)", 0.01);  // rank 2 waits least: the straggler
  TwoRanks::set_time(t.rank1, "Wait Time(ms)", "0");   // a string, even "0"
  const std::string text =
      render_ascend_console({read_ascend_output(t.rank0), read_ascend_output(t.rank1), read_ascend_output(rank2)}, {0, 1, 2});
  EXPECT_NE(text.find("Slow rank: 2 (waits least in collectives: the others wait for it to arrive); not judged: rank 1 "
                      "(1 wait time(s) left out)"),
            std::string::npos)
      << text;
}

// An elapse time that is not a number leaves the elapse and the ratio unknown, not zero; the
// verdict, which needs only wait times, stands.
TEST(AscendOutput, BadElapseTimeIsNotZero) {
  TwoRanks t("comm_elapse");
  TwoRanks::set_time(t.rank1, "Elapse Time(ms)", "abc");
  const auto r1 = read_ascend_output(t.rank1);
  EXPECT_EQ(r1.comm_elapse_left_out, 1);
  const std::string text = render_ascend_console({read_ascend_output(t.rank0), r1}, {0, 1});
  EXPECT_NE(text.find("1     n/a (1 left out)  0.150 ms  0.350 ms         n/a"), std::string::npos) << text;
  EXPECT_EQ(text.find("0.000 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("Slow rank: 0 "), std::string::npos) << text;
}

// Durations past the trace reader's bound (kMaxDurationUs, 11 days) are corrupt in side files too:
// counted as bad cells, their rows left out, never printed as a cut-off row of digits.
TEST(AscendOutput, ImplausibleFiguresAreBadCells) {
  auto dir = fs::temp_directory_path() / "crosstrain_ascend_absurd";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string digits300 = "1" + std::string(300, '0');
  std::ofstream(dir / "kernel_details.csv")
      << "Name,Type,Accelerator Core,Start Time(us),Duration(us)\n"
      << "MatMulV2,MatMulV2,AI_CORE,1.0,1e308\n"
      << "MatMulV2,MatMulV2,AI_CORE,2.0," << digits300 << "\n"
      << "MatMulV2,MatMulV2,AI_CORE,3.0,2e12\n"
      << "MatMulV2,MatMulV2,AI_CORE,4.0,12.5\n"
      << "Sort,Sort,AI_CPU,5.0,999999999999\n";  // just under 11.6 days: long, not corrupt
  std::ofstream(dir / "step_trace_time.csv") << "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free\n"
                                             << "1,100,20,5,25,3\n"
                                             << "2,1e308,20,5,25,3\n";
  std::ofstream(dir / "communication_matrix.json")
      << R"J({"step1": {"collective": {"hcom_allReduce_1": {
           "0-1": {"Transport Type": "HCCS", "Transit Size(MB)": 3.0, "Transit Time(ms)": 1.5, "Bandwidth(GB/s)": -1e308},
           "1-0": {"Transport Type": "HCCS", "Transit Size(MB)": "3", "Transit Time(ms)": 0.15, "Bandwidth(GB/s)": 20.0},
           "0-2": {"Transport Type": "HCCS", "Transit Size(MB)": 3.0, "Transit Time(ms)": 0.3, "Bandwidth(GB/s)": 10.0}}}}})J";
  const auto a = read_ascend_output(dir.string());
  ASSERT_EQ(a.kernels.size(), 2u);
  for (const auto& k : a.kernels) {
    if (k.name == "MatMulV2") {
      EXPECT_EQ(k.count, 1);
      EXPECT_DOUBLE_EQ(k.total_us, 12.5);
    } else {
      EXPECT_DOUBLE_EQ(k.total_us, 999999999999);
    }
  }
  ASSERT_EQ(a.steps.size(), 1u);
  ASSERT_EQ(a.links.size(), 1u);
  EXPECT_EQ(a.links[0].link, "0-2");
  std::string notes;
  for (const auto& n : a.notes) notes += n + "\n";
  EXPECT_NE(notes.find("kernel_details.csv: 3 bad cell(s), those rows left out (record 2 Duration(us) '1e308': "
                       "implausibly large; record 3 Duration(us) '1000000000000000000000000000000000000000...': "
                       "implausibly large; record 4 Duration(us) '2e12': implausibly large)"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("step_trace_time.csv: 1 bad cell(s), those steps left out (record 3 Computing '1e308': implausibly large)"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("communication_matrix.json: 2 bad value(s), those links left out"), std::string::npos) << notes;
  EXPECT_NE(notes.find("hcom_allReduce_1 0-1 Bandwidth(GB/s) '-1e+308': negative"), std::string::npos) << notes;
  EXPECT_NE(notes.find("hcom_allReduce_1 1-0 Transit Size(MB) '\"3\"': a string, not a number"), std::string::npos) << notes;
  // What is printed has units, and no row of 64 digits.
  const std::string text = render_ascend_console({a}, {0});
  EXPECT_NE(text.find("AI_CPU 1 tasks 1000000.000 s;"), std::string::npos) << text;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)  // the notes quote the bad cells, cut at 40 characters
    if (line.rfind("note: ", 0) != 0) EXPECT_EQ(line.find("0000000000000000"), std::string::npos) << line;
  fs::remove_all(dir);
}
