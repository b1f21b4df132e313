// `crosstrain analyze` through the binary: exit codes, outputs, and the HTML page rendered by a
// real headless Chromium (skipped only when no chromium is installed).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include "test_support.h"

namespace {

const std::string kData = std::string(CROSSTRAIN_SOURCE_DIR) + "/tests/data/traces/";
namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out;  // stdout and stderr
};

Result run_shell(const std::string& command) {
  std::string cmd = command + " 2>&1";
  Result r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

Result run(const std::string& args) { return run_shell(std::string(CROSSTRAIN_BINARY) + " " + args); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The command's exit code, output, and peak RSS through /usr/bin/time (which forks from its own
// small process, so the figure is the command's own).
struct RssResult {
  int code = -1;
  std::string out;
  long peak_kib = -1;
};
RssResult run_command_rss(const std::string& args) {
  const fs::path rss = fs::temp_directory_path() / ("crosstrain_cli_analyze_rss_" + std::to_string(::getpid()));
  Result r = run_shell("/usr/bin/time -f %M -o " + rss.string() + " " + std::string(CROSSTRAIN_BINARY) + " " + args);
  RssResult o{r.code, r.out, -1};
  std::ifstream in(rss);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  if (!last.empty()) o.peak_kib = std::stol(last);
  fs::remove(rss);
  return o;
}

fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("crosstrain_cli_analyze_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(CliAnalyze, HelpAndBadFlags) {
  auto help = run("analyze --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--diff"), std::string::npos);
  EXPECT_NE(help.out.find("--html"), std::string::npos);
  EXPECT_EQ(run("analyze --no-such-flag " + kData + "legacy_autograd.json").code, 2);
  EXPECT_EQ(run("analyze --sort speed " + kData + "legacy_autograd.json").code, 2);
  EXPECT_EQ(run("analyze --group-by colour " + kData + "legacy_autograd.json").code, 2);
  EXPECT_EQ(run("analyze").code, 2);
  EXPECT_EQ(run("analyze --top 0 " + kData + "legacy_autograd.json").code, 2);
}

TEST(CliAnalyze, RuntimeProblemsExitOneWithOneLine) {
  auto missing = run("analyze " + kData + "nope.json");
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.out.find("crosstrain: error: "), std::string::npos);
  auto dir = temp_dir("bad");
  std::ofstream(dir / "cut.json") << R"({"traceEvents": [{"ph": "X", "ts": 1, "du)";
  auto cut = run("analyze " + (dir / "cut.json").string());
  EXPECT_EQ(cut.code, 1);
  EXPECT_NE(cut.out.find("cut.json: byte "), std::string::npos) << cut.out;
  EXPECT_EQ(std::count(cut.out.begin(), cut.out.end(), '\n'), 1) << cut.out;
}

TEST(CliAnalyze, ConsoleReportHasTablesAndFindings) {
  auto r = run("analyze --top 5 " + kData + "kineto_gpu_hand.json");
  ASSERT_EQ(r.code, 0) << r.out;
  for (auto s : {"Operators (top 5", "Step breakdown", "ProfilerStep#2", "aten::mm", "Advisor:", "[device_idle]",
                 "cuda:0", "Host syncs"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

TEST(CliAnalyze, JsonToStdoutIsPureJson) {
  auto r = run("analyze --json - --group-by shape " + kData + "kineto_gpu_hand.json");
  ASSERT_EQ(r.code, 0);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  ASSERT_EQ(j["traces"].size(), 1u);
  const auto& t = j["traces"][0];
  EXPECT_EQ(t["steps"].size(), 2u);
  EXPECT_DOUBLE_EQ(t["total"]["duration_us"].get<double>(), 230);
  EXPECT_DOUBLE_EQ(t["total"]["categories_us"]["kernel"].get<double>(), 122);
  bool shaped = false;
  for (const auto& o : t["operators"]) shaped = shaped || o["shapes"] == "[[64,64],[64,64]]";
  EXPECT_TRUE(shaped);
  EXPECT_FALSE(t["findings"].empty());
}

TEST(CliAnalyze, CsvFilesAndRankFolder) {
  auto dir = temp_dir("csv");
  auto r = run("analyze --csv " + dir.string() + " " + kData + "ranks");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Ranks"), std::string::npos);
  std::string steps = slurp(dir / "steps.csv");
  EXPECT_EQ(steps.rfind("trace,rank,step,start_us,duration_us,kernel_us", 0), 0u) << steps;
  EXPECT_EQ(std::count(steps.begin(), steps.end(), '\n'), 5);  // header + 2 ranks x 2 steps
  std::string ops = slurp(dir / "operators.csv");
  EXPECT_NE(ops.find("aten::mm"), std::string::npos);
}

TEST(CliAnalyze, AStragglerRankIsNamedAcrossRanks) {
  auto r = run("analyze --json - " + kData + "ddp/straggler");  // real DDP traces (make_ddp_traces.py)
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rank_findings"].size(), 1u) << r.out;
  EXPECT_EQ(j["rank_findings"][0]["rule"], "straggler");
  EXPECT_EQ(j["rank_findings"][0]["title"], "Rank 1 is a straggler");
  EXPECT_GT(j["traces"][1]["compute_us_per_step"].get<double>(), 1.3 * j["traces"][0]["compute_us_per_step"].get<double>());
  auto console = run("analyze " + kData + "ddp/straggler");
  EXPECT_NE(console.out.find("Across ranks: 1 finding(s)\n  [straggler] Rank 1 is a straggler"), std::string::npos)
      << console.out;
  const auto html = temp_dir("straggler_html") / "report.html";
  ASSERT_EQ(run("analyze --html " + html.string() + " " + kData + "ddp/straggler").code, 0);
  const std::string page = slurp(html);
  const auto table = page.find("id=\"rank-findings\"");
  ASSERT_NE(table, std::string::npos);
  EXPECT_NE(page.find("Rank 1 is a straggler", table), std::string::npos);
  auto balanced = run("analyze --json - " + kData + "ddp/balanced");
  ASSERT_EQ(balanced.code, 0) << balanced.out;
  EXPECT_TRUE(nlohmann::json::parse(balanced.out)["rank_findings"].empty()) << balanced.out;
}

// A folder with one trace per rank and profiling cycle (tensorboard_trace_handler with a repeating
// schedule): each rank is judged over all its cycles, never against another cycle of itself. Here
// cycle 1 is the balanced run and in cycle 2 both ranks run the straggler's slow steps: no rank is
// slower than the other, though one cycle is twice as slow as the other.
TEST(CliAnalyze, ProfilingCyclesOfOneRankAreNotComparedWithEachOther) {
  const auto dir = temp_dir("cycles");
  fs::copy_file(kData + "ddp/balanced/rank0.json.gz", dir / "host_1.100.pt.trace.json.gz");
  fs::copy_file(kData + "ddp/balanced/rank1.json.gz", dir / "host_2.100.pt.trace.json.gz");
  const std::string slow = kData + "ddp/straggler/rank1.json.gz";
  ASSERT_EQ(std::system(("gzip -dc '" + slow + "' | sed 's/\"rank\": 1,/\"rank\": 0,/' | gzip > '" +
                         (dir / "host_1.200.pt.trace.json.gz").string() + "'").c_str()), 0);
  fs::copy_file(slow, dir / "host_2.200.pt.trace.json.gz");
  auto r = run("analyze --json - " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["traces"].size(), 4u);
  std::set<int> ranks;
  for (const auto& t : j["traces"]) ranks.insert(t["rank"].get<int>());
  EXPECT_EQ(ranks, (std::set<int>{0, 1}));
  EXPECT_TRUE(j["rank_findings"].empty()) << j["rank_findings"].dump();
  // The real straggler still shows through its cycles: rank 1 slow in both.
  fs::remove(dir / "host_1.200.pt.trace.json.gz");
  fs::copy_file(kData + "ddp/straggler/rank0.json.gz", dir / "host_1.200.pt.trace.json.gz");
  fs::remove(dir / "host_2.100.pt.trace.json.gz");
  fs::copy_file(slow, dir / "host_2.100.pt.trace.json.gz");
  r = run("analyze --json - " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rank_findings"].size(), 1u) << r.out;
  EXPECT_EQ(j["rank_findings"][0]["title"], "Rank 1 is a straggler");
  fs::remove_all(dir);
}

TEST(CliAnalyze, DiffOfTwoTraces) {
  auto r = run("analyze --diff " + kData + "crosstrain_cpu.json " + kData + "torch_cpu_small.json --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["time_basis"], "host self");
  EXPECT_FALSE(j["rows"].empty());
  EXPECT_EQ(run("analyze --diff " + kData + "crosstrain_cpu.json").code, 2);
}

TEST(CliAnalyze, HtmlRendersChartsInHeadlessChromium) {
  auto dir = temp_dir("html");
  auto html = dir / "report.html";
  auto r = run("analyze --html " + html.string() + " " + kData + "kineto_gpu_hand.json");
  ASSERT_EQ(r.code, 0) << r.out;
  std::string page = slurp(html);
  EXPECT_EQ(page.find("http://"), std::string::npos);  // self-contained
  EXPECT_EQ(page.find("https://"), std::string::npos);
  for (auto id : {"id=\"steps-0\"", "id=\"top-ops-0\"", "id=\"op-types-0\"", "id=\"memory-0\"", "id=\"findings-0\"",
                  "id=\"top-kernels-0\"", "id=\"timeline-0\""})
    EXPECT_NE(page.find(id), std::string::npos) << id;
  EXPECT_EQ(page.find("<script"), std::string::npos);  // zoom is CSS-only

  const std::string browser = crosstrain::testing::chromium();
  if (browser.empty()) GTEST_SKIP() << "chromium not installed";
  // --dump-dom prints the DOM after layout; the charts must survive parsing with their marks.
  const std::string dom = crosstrain::testing::rendered_dom(browser, html, dir / "profile");
  ASSERT_FALSE(dom.empty()) << "chromium printed no DOM";
  for (auto cls : {"chart chart-stacked", "chart chart-hbar", "chart chart-pie", "chart chart-line", "chart chart-timeline"})
    EXPECT_NE(dom.find(cls), std::string::npos) << cls;
  // The timeline of the median step holds the host thread, its runtime calls and device streams.
  auto tl = dom.find("chart chart-timeline");
  ASSERT_NE(tl, std::string::npos);
  EXPECT_NE(dom.find("<title>implicit_convolve_sgemm", tl), std::string::npos);
  size_t marks = 0;
  for (size_t at = dom.find("class=\"mark\""); at != std::string::npos; at = dom.find("class=\"mark\"", at + 1)) ++marks;
  EXPECT_GT(marks, 15u);
}

TEST(CliAnalyze, UnrecognisedTraceIsAnErrorAlsoInDiff) {
  auto dir = temp_dir("unrecognised");
  std::ofstream(dir / "w.json") << R"({"traceEvents": [{"ph": "X", "cat": "Widget", "name": "a", "pid": 1, "tid": 1,
                                      "ts": 0, "dur": 5}]})";
  auto r = run("analyze " + (dir / "w.json").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("nothing in this trace was recognised"), std::string::npos) << r.out;
  auto d = run("analyze --diff " + (dir / "w.json").string() + " " + (dir / "w.json").string());
  EXPECT_EQ(d.code, 1);
  EXPECT_EQ(d.out.find("no operator or category changed"), std::string::npos) << d.out;
}

TEST(CliAnalyze, OldGenerationDiffReportsTheChange) {
  auto d = run("analyze --diff " + kData + "kineto_old_generation.json " + kData + "kineto_old_generation_faster.json");
  EXPECT_EQ(d.code, 0) << d.out;
  EXPECT_NE(d.out.find("faster"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("no operator or category changed"), std::string::npos) << d.out;
}

TEST(CliAnalyze, AscendFolderWithNotesAndViews) {
  auto r = run("analyze " + kData + "ascend_pt/node0_1001_20240101_ascend_pt");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("skipped "), std::string::npos) << r.out;  // the side files are not traces
  EXPECT_NE(r.out.find("Top kernels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[ai_cpu_fallback]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("evidence: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Ascend kernel_details.csv"), std::string::npos) << r.out;
  auto dir = temp_dir("ascend_json");
  auto cluster = run("analyze --json " + (dir / "a.json").string() + " --html " + (dir / "a.html").string() + " " +
                     kData + "ascend_pt");
  std::string page = slurp(dir / "a.html");
  auto ranks = page.find("id=\"ranks\"");
  ASSERT_NE(ranks, std::string::npos);  // per-rank table on a multi-rank page
  EXPECT_LT(ranks, page.find("id=\"findings-0\""));
  ASSERT_EQ(cluster.code, 0) << cluster.out;
  EXPECT_NE(cluster.out.find("Slow rank: "), std::string::npos) << cluster.out;
  auto j = nlohmann::json::parse(slurp(dir / "a.json"));
  ASSERT_EQ(j["traces"].size(), 2u);
  EXPECT_EQ(j["traces"][0]["ascend"]["cores"].size(), 4u);
  EXPECT_FALSE(j["traces"][0]["findings"][0]["evidence"].get<std::string>().empty());
}

TEST(CliAnalyze, GzipLimitFlag) {
  auto dir = temp_dir("gzlimit");
  std::string doc = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]})";
  doc += std::string((1u << 20) + 1 - doc.size(), ' ');  // 1 MiB + 1 byte inflated
  std::ofstream(dir / "t.json") << doc;
  ASSERT_EQ(std::system(("gzip -kf " + (dir / "t.json").string()).c_str()), 0);
  auto refused = run("analyze --max-inflated-mib 1 " + (dir / "t.json.gz").string());
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.out.find("--max-inflated-mib"), std::string::npos) << refused.out;
  EXPECT_EQ(run("analyze --max-inflated-mib 2 " + (dir / "t.json.gz").string()).code, 0);
}

// Two profiler runs side by side (level0/, level1/, each with two *_ascend_pt ranks): every run is
// read, ranks are compared within their run, and each rank's breakdown is set against the
// profiler's step_trace_time.csv.
TEST(CliAnalyze, AFolderOfAscendRuns) {
  auto dir = temp_dir("ascend_runs");
  auto r = run("analyze --json " + (dir / "a.json").string() + " " + kData + "ascend_runs");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Run " + kData + "ascend_runs/level0: Ranks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Run " + kData + "ascend_runs/level1: Ranks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("this trace / the profiler over 3 step(s): computing 7.155 ms / 7.155 ms"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("they differ by up to"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(slurp(dir / "a.json"));
  ASSERT_EQ(j["traces"].size(), 4u);
  EXPECT_EQ(j["traces"][3]["run"], kData + "ascend_runs/level1");
  EXPECT_LT(j["traces"][3]["ascend"]["agreement"]["worst"].get<double>(), 0.05);
}

// A communication.json cut short is a note; the rest of the run is analyzed (exit 0).
TEST(CliAnalyze, TruncatedAscendSideFileIsANote) {
  auto dir = temp_dir("ascend_cut");
  fs::copy(kData + "ascend_runs/level1", dir / "level1", fs::copy_options::recursive);
  int cut = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename() == "communication.json") fs::resize_file(e.path(), 100), ++cut;
  ASSERT_EQ(cut, 2);
  auto r = run("analyze " + (dir / "level1").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("communication.json: not valid JSON at byte"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Ascend step_trace_time.csv (rank 1)"), std::string::npos) << r.out;
}

// Only the database export: exit 1, one line saying how to get the text export.
TEST(CliAnalyze, AscendDatabaseExportOnly) {
  auto dir = temp_dir("ascend_db");
  fs::create_directories(dir / "node0_1_20260101_ascend_pt" / "ASCEND_PROFILER_OUTPUT");
  std::ofstream(dir / "node0_1_20260101_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db") << "x";
  auto r = run("analyze " + dir.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("export_type=\"text\""), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

// A trace that a profiler truncates while analyze reads it (the file is being rewritten): exit 0
// with what was read whole, or exit 1 with one line, never a crash. A mapped file died of SIGBUS
// (exit 135) when the parser reached the pages the truncation took away.
TEST(CliAnalyze, ATraceTruncatedWhileReadIsNeverACrash) {
  auto dir = temp_dir("shrinking");
  const fs::path base = dir / "base.json", trace = dir / "trace.json";
  {
    std::ofstream out(base);
    out << R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 9000000})";
    for (int i = 0; i < 600000; ++i)
      out << ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::add\", \"pid\": 1, \"tid\": 1, \"ts\": " << 10 + 10 * i
          << ", \"dur\": 5, \"args\": {\"External id\": " << i << "}}";
    out << "]}";
  }
  ASSERT_GT(fs::file_size(base), size_t{64} << 20);
  for (const char* delay : {"0.05", "0.15", "0.3"}) {
    SCOPED_TRACE(delay);
    fs::copy_file(base, trace, fs::copy_options::overwrite_existing);
    const std::string sh = "cd " + dir.string() + " && (" + std::string(CROSSTRAIN_BINARY) +
                           " analyze trace.json --top 1 > out.txt 2>&1; echo $? > rc.txt) & sleep " + delay +
                           "; truncate -s 1048576 " + trace.string() + "; wait";
    ASSERT_EQ(std::system(("sh -c '" + sh + "'").c_str()), 0);
    const int rc = std::stoi(slurp(dir / "rc.txt"));
    const std::string out = slurp(dir / "out.txt");
    EXPECT_TRUE(rc == 0 || rc == 1) << "exit " << rc << ": " << out.substr(0, 300);
    if (rc == 1) {
      EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
      EXPECT_NE(out.find("trace.json"), std::string::npos) << out;
    }
  }
  fs::remove_all(dir);  // 150 MB
}

// kernel_details.csv is read one record at a time: a 31 MB file costs kilobytes, not a table of
// strings several times the file's size (the previous reader: ~4.8x on these rows, 33x on others).
TEST(CliAnalyze, BigAscendCsvInLittleMemory) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer's shadow memory counts in the RSS (scripts/sanitize.sh)";
#endif
  auto dir = temp_dir("ascend_big_csv");
  const fs::path out = dir / "node0_1_20260101_ascend_pt" / "ASCEND_PROFILER_OUTPUT";
  fs::create_directories(out);
  fs::copy_file(kData + "ascend_runs/level1/node0_39560_202601010000010_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
                out / "trace_view.json");
  {
    std::ofstream csv(out / "kernel_details.csv");
    csv << "Step Id,Device_id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Num,Input Shapes\n";
    for (int i = 0; i < 350000; ++i)
      csv << "1,0,MatMulV2_" << i % 500 << ",MatMulV2,AI_CORE,17672256000" << 10000 + i << ".000\t,12.5,0.5,20,"
          << "\"64,1024;1024,1024\"\n";
  }
  ASSERT_GT(fs::file_size(out / "kernel_details.csv"), size_t{29} << 20);
  auto r = run_command_rss("analyze " + dir.string() + " --top 1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("AI_CORE 350,000 tasks"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_GT(r.peak_kib, 0);
  EXPECT_LT(r.peak_kib, 48 * 1024) << "peak RSS, KiB";
  fs::remove_all(dir);
}

namespace {

// A real torch.profiler recording (with_stack, `loss.item()` each step) as `crosstrain run
// --profile` lays it out, RUN/cycle0/rank0.pt.trace.json, with a call-site side file that places
// every `.item()` call at line 7 of `file`, whose code is `code`.
fs::path profile_run(const std::string& name, const std::string& file, const std::string& code) {
  const auto run_dir = temp_dir(name);
  fs::create_directories(run_dir / "cycle0");
  const fs::path trace = run_dir / "cycle0" / "rank0.pt.trace.json";
  EXPECT_EQ(run_shell("zcat " + kData + "torch_cpu_stack.json.gz > " + trace.string()).code, 0);
  const std::string text = slurp(trace);
  const std::regex item(R"("<built-in method item of Tensor object at 0x[0-9a-f]+>", "pid": \d+, "tid": \d+,\s*"ts": (\d+)\.(\d{3}))");
  const std::regex base(R"("baseTimeNanoseconds": (\d+))");
  std::smatch m;
  EXPECT_TRUE(std::regex_search(text, m, base));
  const long long base_ns = std::stoll(m[1]);
  nlohmann::json calls = nlohmann::json::array();
  for (auto it = std::sregex_iterator(text.begin(), text.end(), item); it != std::sregex_iterator(); ++it)
    calls.push_back({base_ns + std::stoll((*it)[1]) * 1000 + std::stoll((*it)[2]), 0, 7});
  EXPECT_GE(calls.size(), 3u);
  nlohmann::json side = {{"format", "crosstrain-call-sites"}, {"version", 1}, {"cpus", 2},
                         {"files", nlohmann::json::array({nlohmann::json::array({file, "user"})})}, {"calls", calls},
                         {"lines", nlohmann::json::array({nlohmann::json::array({0, 7, code})})}};
  std::ofstream(run_dir / "cycle0" / "rank0.pt.trace.sources.json") << side.dump();
  return run_dir;
}

bool has_control_bytes(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n' && c != '\t') || u == 0x7f;
  }) || s.find("\xc2\x9b") != std::string::npos;
}

}  // namespace

// The side file's code lines and file names are someone else's text: a line that clears the
// screen or retitles the terminal is printed as escapes on the console, as the HTML page escapes
// it, and its lines are still named.
TEST(CliAnalyze, TerminalSequencesFromASideFileArePrintedAsEscapes) {
  const auto dir = profile_run("escapes", "train\x1b]0;owned\x07.py", "print(loss.item())\x1b[2J\x1b[1;1H\xc2\x9b" "31m");
  auto r = run("analyze " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(has_control_bytes(r.out)) << r.out;
  EXPECT_NE(r.out.find("train\\x1b]0;owned\\x07.py:7 print(loss.item())\\x1b[2J\\x1b[1;1H\\u009b31m"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[host_read]"), std::string::npos) << r.out;
  // JSON keeps the text as it is, its control characters escaped by JSON itself (\u001b).
  auto j = run("analyze --json - " + dir.string());
  ASSERT_EQ(j.code, 0);
  EXPECT_EQ(j.out.find('\x1b'), std::string::npos);
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["traces"][0]["script"]["host_reads"][0]["code"], "print(loss.item())\x1b[2J\x1b[1;1H\xc2\x9b" "31m");
}

// An output that names one of the files read, directly, through a symbolic link or as another hard
// link, is refused with one line and exit 2 before anything is written; the inputs stay intact.
TEST(CliAnalyze, AnOutputNeverOverwritesAnInput) {
  const auto dir = profile_run("own_input", "train.py", "print(loss.item())");
  const fs::path trace = dir / "cycle0" / "rank0.pt.trace.json";
  const fs::path side = dir / "cycle0" / "rank0.pt.trace.sources.json";
  const std::string trace_bytes = slurp(trace), side_bytes = slurp(side);
  const auto links = temp_dir("own_input_links");  // outside the run: not read as traces
  fs::create_symlink(trace, links / "link.json");
  fs::create_hard_link(trace, links / "hard.json");
  fs::create_directories(dir / "out");
  const std::string d = dir.string(), l = links.string();
  for (const std::string& flags :
       {"--html " + trace.string(), "--json " + side.string(), "--csv " + trace.string(), "--html " + l + "/link.json",
        "--json " + l + "/hard.json", "--html " + d + "/cycle0/../cycle0/rank0.pt.trace.json",
        "--json " + d + "/out/report.json --html " + trace.string()}) {
    auto r = run("analyze " + d + " " + flags);
    EXPECT_EQ(r.code, 2) << flags << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_NE(r.out.find("one of the files read"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir / "out" / "report.json"));  // nothing written before the refusal
  }
  // A trace given by name, and the two sides of a diff.
  EXPECT_EQ(run("analyze " + trace.string() + " --html " + trace.string()).code, 2);
  EXPECT_EQ(run("analyze --diff " + trace.string() + " " + kData + "torch_cpu_small.json --json " + l + "/hard.json").code, 2);
  EXPECT_EQ(slurp(trace), trace_bytes);
  EXPECT_EQ(slurp(side), side_bytes);
  // Beside the inputs is fine.
  auto ok = run("analyze " + d + " --html " + d + "/run.html --json " + d + "/out/report.json --csv " + d + "/out");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_TRUE(fs::exists(dir / "run.html"));
  EXPECT_TRUE(fs::exists(dir / "out" / "steps.csv"));
}
