// `crosstrain run --profile` on real training scripts (tests/python/profile_scripts: torchvision's
// ResNet-18 on a JPEG tree written by `crosstrain make-imagefolder`, timm's ViT, transformers'
// GPT-2, a Llama-style model of the script's own with many RMSNorm instances), then `crosstrain
// analyze` on the run's folder. Three problems planted in copies of the
// clean scripts are each found at their line; the clean scripts get no finding; the run's page
// renders in headless Chromium; the loss printed by an existing run script is named in its
// helper module. Each script is recorded once per test process (~5-10 s each).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "test_support.h"

namespace fs = std::filesystem;
using crosstrain::testing::binary;
using crosstrain::testing::python;
using crosstrain::testing::read_bytes;
using crosstrain::testing::run_command;
using crosstrain::testing::scratch_dir;
using crosstrain::testing::source_dir;
using nlohmann::json;

namespace {

std::string scripts() { return source_dir() + "/tests/python/profile_scripts"; }
std::string run_scripts() { return source_dir() + "/tests/python/run_scripts"; }

// "script.py:N" for the first line of the script (in `dir`) holding `marker`.
std::string line_of(const std::string& script, const std::string& marker, const std::string& dir = scripts()) {
  std::ifstream in(dir + "/" + script);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(marker) != std::string::npos) return script + ":" + std::to_string(n);
  ADD_FAILURE() << script << " has no line with " << marker;
  return "";
}

// A JPEG tree as the ImageFolder scripts read it (ROOT/train/<class>/*.jpg, 500x375).
const fs::path& jpeg_tree() {
  static const fs::path root = [] {
    auto dir = scratch_dir("profile_jpegs");
    auto r = run_command(binary() + " make-imagefolder --out " + dir.string() + " --train 64 --val 8 --classes 4 --threads 1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return dir;
  }();
  return root;
}

struct Recording {
  fs::path profile;  // the run's --profile folder
  std::string output;
  json trace;        // analyze's JSON of the run's one trace
};

// `crosstrain run --profile prof -- python DIR/SCRIPT` with the default schedule, then `analyze prof --json -`.
const Recording& recording(const std::string& script, const std::string& dir = scripts(), const std::string& extra = "") {
  static std::map<std::string, Recording> done;
  auto it = done.find(script);
  if (it != done.end()) return it->second;
  Recording r;
  const auto where = scratch_dir("profile_" + script.substr(0, script.size() - 3));
  r.profile = where / "prof";
  const std::string args = script.rfind("train_imagefolder", 0) == 0 ? jpeg_tree().string() : "";
  auto run = run_command("cd " + where.string() + " && " + binary() + " run --profile prof -- " + python() + " " + dir +
                         "/" + script + " " + args + " " + extra);
  r.output = run.output;
  EXPECT_EQ(run.exit_code, 0) << run.output;
  auto analyzed = run_command(binary() + " analyze " + r.profile.string() + " --json -", /*merge_stderr=*/false);
  EXPECT_EQ(analyzed.exit_code, 0) << analyzed.output;
  const json doc = json::parse(analyzed.output, nullptr, /*allow_exceptions=*/false);
  if (doc.is_object() && doc.contains("traces") && doc["traces"].size() == 1) r.trace = doc["traces"][0];
  else ADD_FAILURE() << script << ": not one trace in\n" << analyzed.output.substr(0, 2000) << "\n" << run.output;
  return done.emplace(script, r).first->second;
}

// The findings that follow from what a script does. warmup_step is left out: it compares the first
// recorded step with the others, and with three recorded steps of a few tens of milliseconds a
// busy 2-core machine (another test running beside this one) makes any of them 2x the rest
// (tests/tools/analyze/advisor_test.cpp tests that rule on traces built for it).
std::set<std::string> rules(const json& trace) {
  std::set<std::string> out;
  for (const auto& f : trace.value("findings", json::array()))
    if (f["rule"] != "warmup_step") out.insert(f["rule"].get<std::string>());
  return out;
}

json finding(const json& trace, const std::string& rule) {
  for (const auto& f : trace.value("findings", json::array()))
    if (f["rule"] == rule) return f;
  return json();
}

std::vector<std::string> wheres(const json& sources) {
  std::vector<std::string> out;
  for (const auto& s : sources) out.push_back(s["where"].get<std::string>());
  return out;
}

bool names(const json& sources, const std::string& where) {
  const auto w = wheres(sources);
  return std::find(w.begin(), w.end(), where) != w.end();
}

}  // namespace

class CleanScript : public ::testing::TestWithParam<std::string> {};

TEST_P(CleanScript, GetsNoFindingAndEveryTopOperatorNamesALineOfIt) {
  const std::string script = GetParam();
  const Recording& r = recording(script);
  ASSERT_TRUE(r.trace.is_object());
  EXPECT_NE(r.output.find("trace " + (r.profile / "cycle0" / "rank0.pt.trace.json").string()), std::string::npos) << r.output;
  EXPECT_TRUE(rules(r.trace).empty()) << script << ": " << r.trace["findings"].dump(1);
  ASSERT_TRUE(r.trace["script"]["source_lines"].get<bool>());
  ASSERT_EQ(r.trace["steps"].size(), 3u);  // wait 1, warmup 1, active 3
  const json& phases = r.trace["total"]["phases_us"];
  for (const char* p : {"forward", "backward", "optimizer"}) EXPECT_GT(phases[p].get<double>(), 0) << p;
  // The top operators all run under the script's own loop: each row names a line of it.
  const auto& ops = r.trace["operators"];
  for (size_t i = 0; i < ops.size() && i < 10; ++i) {
    ASSERT_FALSE(ops[i]["sources"].empty()) << ops[i].dump();
    EXPECT_EQ(ops[i]["sources"][0]["where"].get<std::string>().rfind(script + ":", 0), 0u) << ops[i].dump();
  }
  const auto& loaders = r.trace["script"]["dataloaders"];
  ASSERT_EQ(loaders.size(), 1u);
  EXPECT_EQ(loaders[0]["made_at"], line_of(script, "torch.utils.data.DataLoader("));
}

INSTANTIATE_TEST_SUITE_P(RunProfile, CleanScript,
                         ::testing::Values("train_imagefolder.py", "train_vit.py", "train_gpt2.py", "train_rmsnorm.py"),
                         [](const auto& info) { return info.param.substr(6, info.param.size() - 9); });

TEST(RunProfile, AnItemEveryStepIsFoundAtItsLine) {
  const Recording& r = recording("train_vit_item.py");
  ASSERT_TRUE(r.trace.is_object());
  EXPECT_EQ(rules(r.trace), std::set<std::string>{"host_read"}) << r.trace["findings"].dump(1);
  const json f = finding(r.trace, "host_read");
  ASSERT_FALSE(f.is_null());
  ASSERT_FALSE(f["sources"].empty());
  EXPECT_EQ(f["sources"][0]["where"], line_of("train_vit_item.py", "# planted"));
  EXPECT_DOUBLE_EQ(f["sources"][0]["per_step"].get<double>(), 1.0);
  EXPECT_NE(f["sources"][0]["code"].get<std::string>().find("loss.item()"), std::string::npos);
}

TEST(RunProfile, NoWorkersOnJpegsIsFoundAtTheDataLoadersLine) {
  const Recording& r = recording("train_imagefolder_no_workers.py");
  ASSERT_TRUE(r.trace.is_object());
  EXPECT_EQ(rules(r.trace), std::set<std::string>{"dataloader_workers"}) << r.trace["findings"].dump(1);
  const json f = finding(r.trace, "dataloader_workers");
  ASSERT_FALSE(f.is_null());
  EXPECT_EQ(f["measured"].get<std::string>().rfind("num_workers=0: ", 0), 0u) << f["measured"];
  EXPECT_TRUE(names(f["sources"], line_of("train_imagefolder_no_workers.py", "# planted"))) << f["sources"].dump(1);
  // ... and the loop line where the steps waited.
  EXPECT_TRUE(names(f["sources"], line_of("train_imagefolder_no_workers.py", "for images, labels in loader:")))
      << f["sources"].dump(1);
  EXPECT_GT(r.trace["script"]["loader_time"]["in_process_us"].get<double>(), 0);
}

TEST(RunProfile, ALoopOfTinyOperatorsIsFoundAtItsLine) {
  const Recording& r = recording("train_gpt2_loop.py");
  ASSERT_TRUE(r.trace.is_object());
  EXPECT_EQ(rules(r.trace), std::set<std::string>{"python_op_loop"}) << r.trace["findings"].dump(1);
  const json f = finding(r.trace, "python_op_loop");
  ASSERT_FALSE(f.is_null());
  ASSERT_FALSE(f["sources"].empty());
  const json& line = f["sources"][0];
  EXPECT_EQ(line["where"], line_of("train_gpt2_loop.py", "# planted"));
  // Two calls per parameter (mul_, add_), one operator each.
  EXPECT_GE(line["per_step"].get<double>(), 32);
  EXPECT_EQ(line["ops"].get<int64_t>(), line["count"].get<int64_t>());
}

TEST(RunProfile, TheRunsPageRendersInHeadlessChromiumWithItsLines) {
  const Recording& r = recording("train_vit_item.py");
  const auto page = r.profile.parent_path() / "run.html";
  auto a = run_command(binary() + " analyze " + r.profile.string() + " --html " + page.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const std::string html = read_bytes(page);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  const std::string browser = crosstrain::testing::chromium();
  if (browser.empty()) GTEST_SKIP() << "chromium not installed";
  const std::string dom = crosstrain::testing::rendered_dom(browser, page, page.parent_path() / "chromium");
  ASSERT_FALSE(dom.empty()) << "chromium printed no DOM";
  auto section = [&](const std::string& id) {
    const size_t at = dom.find("id=\"" + id + "\"");
    return at == std::string::npos ? std::string() : dom.substr(at, dom.find("</table>", at) - at);
  };
  // The finding names the planted line; every top operator row names a line of the script.
  EXPECT_NE(section("findings-0").find(line_of("train_vit_item.py", "# planted")), std::string::npos);
  const std::string ops = section("op-lines-0");
  size_t rows = 0, named = 0;
  for (size_t at = ops.find("<tr>"); at != std::string::npos; at = ops.find("<tr>", at + 1)) {
    ++rows;
    const std::string row = ops.substr(at, ops.find("</tr>", at) - at);
    if (row.find("train_vit_item.py:") != std::string::npos) ++named;
  }
  EXPECT_EQ(rows, 11u);  // the header and ten operators
  EXPECT_EQ(named, 10u);
  // The step breakdown, the phases and the timeline are drawn, with their marks.
  for (const char* id : {"steps-0", "phases-0", "timeline-0", "top-ops-0"}) {
    const size_t at = dom.find("id=\"" + std::string(id) + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    EXPECT_NE(dom.find("class=\"mark\"", at), std::string::npos) << id;
  }
  EXPECT_NE(section("dataloaders-0").find(line_of("train_vit_item.py", "torch.utils.data.DataLoader(")), std::string::npos);
}

TEST(RunProfile, TheRunScriptsPrintOfTheLossIsAHostReadInTheirSharedLoop) {
  // tests/python/run_scripts: timm's ViT trained by the loop of common.py, which prints loss.item()
  // every step; the read is named in common.py, the user's module the script imports.
  const Recording& r = recording("train_timm_vit.py", run_scripts(), "--steps 6");
  ASSERT_TRUE(r.trace.is_object());
  EXPECT_EQ(rules(r.trace), std::set<std::string>{"host_read"}) << r.trace["findings"].dump(1);
  const json f = finding(r.trace, "host_read");
  ASSERT_FALSE(f.is_null());
  EXPECT_EQ(f["sources"][0]["where"], line_of("common.py", "loss.item()", run_scripts()));
}
