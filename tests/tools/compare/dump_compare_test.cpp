#include "tools/compare/dump_compare.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "tools/compare/compare_report.h"
#include "tools/dump/dump_writer.h"
#include "tools/dump/temp_dir.h"

using namespace crosstrain::dump;
using namespace crosstrain::compare;
using crosstrain::testing::TempDir;

namespace {

// A small "network" dump: forward outputs, output gradients, parameter gradients and the loss for
// two steps. `disturb` names a record whose values get relative noise of that size.
void write_run(const std::string& dir, DumpMode mode, const std::string& disturb = "", double size = 0.0,
               const std::string& skip = "", bool nan_in_disturbed = false) {
  DumpWriter w;
  w.open(dir, mode);
  const std::vector<std::pair<RecordKind, std::string>> records = {
      {RecordKind::Forward, "conv1"},        {RecordKind::Forward, "layer1.0.conv1"},
      {RecordKind::Forward, "layer1.0"},     {RecordKind::Forward, "fc"},
      {RecordKind::GradOutput, "fc"},        {RecordKind::GradOutput, "layer1.0"},
      {RecordKind::ParamGrad, "fc.weight"},  {RecordKind::ParamGrad, "conv1.weight"}};
  for (int64_t step = 0; step < 2; ++step) {
    for (size_t k = 0; k < records.size(); ++k) {
      const auto& [kind, path] = records[k];
      const std::string name = record_name(kind, path);
      if (name == skip) continue;
      std::vector<float> v(1000);
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(static_cast<int>((i * 31 + k * 17 + step) % 97) - 48) / 10.0f;
      if (name == disturb) {
        for (size_t i = 0; i < v.size(); ++i) v[i] += static_cast<float>(size * ((i % 7) - 3.0));
        if (nan_in_disturbed) v[5] = std::nanf("");
      }
      w.write_tensor(step, path, kind, DType::Float32, {10, 100}, v.data());
    }
    w.write_scalar(step, RecordKind::Loss, 2.0 - 0.1 * static_cast<double>(step));
    w.log_loss(step, 2.0 - 0.1 * static_cast<double>(step));
  }
  w.close();
}

}  // namespace

TEST(DumpCompare, IdenticalRunsAgreeExactly) {
  TempDir a("cmp"), b("cmp");
  write_run(a.str(), DumpMode::Tensors);
  write_run(b.str(), DumpMode::Tensors);
  auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_TRUE(r.agree);
  EXPECT_EQ(r.tensors.size(), 18u);
  EXPECT_EQ(r.counts.exact, 18);
  EXPECT_EQ(r.counts.pass, 18);
  EXPECT_FALSE(r.first_divergence.has_value());
  ASSERT_TRUE(r.loss.has_value());
  EXPECT_TRUE(r.loss->within_tolerance());
  EXPECT_EQ(r.bytes_compared, 2 * 16 * 4000 + 2 * 2 * 4);
}

TEST(DumpCompare, FirstDivergenceIsTheDisturbedRecordWithContext) {
  TempDir a("cmp"), b("cmp");
  write_run(a.str(), DumpMode::Tensors);
  write_run(b.str(), DumpMode::Tensors, "forward/layer1.0", 3.0);
  CompareOptions opt;
  opt.context = 2;
  auto r = compare_paths(a.str(), b.str(), opt);
  EXPECT_FALSE(r.agree);
  ASSERT_TRUE(r.first_divergence.has_value());
  const auto& t = r.tensors[*r.first_divergence];
  EXPECT_EQ(t.step, 0);
  EXPECT_EQ(t.name, "forward/layer1.0");
  EXPECT_EQ(t.verdict, Verdict::Error);
  auto window = r.divergence_window();
  ASSERT_EQ(window.size(), 3u);
  EXPECT_EQ(r.tensors[window[0]].name, "forward/conv1");
  EXPECT_EQ(r.tensors[window[1]].name, "forward/layer1.0.conv1");
  EXPECT_TRUE(r.tensors[window[1]].exact());
}

TEST(DumpCompare, NanOnOneSideIsAnError) {
  TempDir a("cmp"), b("cmp");
  write_run(a.str(), DumpMode::Tensors);
  write_run(b.str(), DumpMode::Tensors, "grad_output/fc", 0.0, "", true);
  auto r = compare_paths(a.str(), b.str(), {});
  ASSERT_TRUE(r.first_divergence.has_value());
  EXPECT_EQ(r.tensors[*r.first_divergence].name, "grad_output/fc");
  EXPECT_NE(r.tensors[*r.first_divergence].reason.find("NaN"), std::string::npos);
}

TEST(DumpCompare, BadInputIsReportedPerRecord) {
  TempDir a("cmp"), b("cmp");
  write_run(a.str(), DumpMode::Tensors);
  write_run(b.str(), DumpMode::Tensors, "", 0.0, "forward/fc");
  auto idx_b = std::filesystem::path(b.str());
  // Corrupt one file, delete another; the rest must still be compared.
  std::vector<std::string> files;
  for (auto& e : std::filesystem::recursive_directory_iterator(idx_b / "tensors/step0")) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::filesystem::remove(files[0]);                       // forward/conv1
  std::filesystem::resize_file(files[1], 100);             // forward/layer1.0.conv1
  auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_FALSE(r.agree);
  EXPECT_EQ(r.counts.unreadable, 2);
  EXPECT_EQ(r.counts.missing_in_b, 2);  // forward/fc of both steps
  EXPECT_EQ(r.tensors[0].status, PairStatus::Unreadable);
  EXPECT_NE(r.tensors[0].reason.find("cannot open"), std::string::npos);
  EXPECT_NE(r.tensors[1].reason.find("truncated"), std::string::npos);
  EXPECT_EQ(r.counts.pass, 18 - 2 - 2);
  CompareOptions lenient;
  lenient.allow_missing = true;
  EXPECT_FALSE(compare_paths(a.str(), b.str(), lenient).agree);  // unreadable files still differ
}

TEST(DumpCompare, ShapeMismatchNewerVersionAndBadLines) {
  TempDir a("cmp"), b("cmp");
  write_run(a.str(), DumpMode::Stats);
  write_run(b.str(), DumpMode::Stats);
  // Rewrite B's index: one shape changed, one garbage line.
  const std::string index = b / "index.jsonl";
  std::ifstream in(index);
  std::string text((std::istreambuf_iterator<char>(in)), {}), out;
  in.close();
  size_t pos = text.find("\"shape\":[10,100]");
  text.replace(pos, 16, "\"shape\":[100,10]");
  text += "{not json\n";
  std::ofstream(index) << text;
  auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_EQ(r.counts.shape_mismatch, 1);
  EXPECT_EQ(r.problems.size(), 1u);
  EXPECT_FALSE(r.agree);
  EXPECT_EQ(r.tensors[*r.first_divergence].status, PairStatus::ShapeMismatch);

  pos = text.find("\"version\":1");
  text.replace(pos, 11, "\"version\":9");
  std::ofstream(index) << text;
  // An index this crosstrain cannot read gives no result at all, not a difference.
  try {
    compare_paths(a.str(), b.str(), {});
    ADD_FAILURE() << "a dump of a newer format version was compared";
  } catch (const UnreadableInput& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read B: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(compare_paths(a.str(), b / "nope", {}), std::invalid_argument);
  std::filesystem::create_directories(a / "no_dump");
  EXPECT_THROW(compare_paths(a.str(), a / "no_dump", {}), std::invalid_argument);
}

TEST(DumpCompare, StatsDumpsCompareByStatistics) {
  TempDir a("cmp"), b("cmp"), c("cmp");
  write_run(a.str(), DumpMode::Stats);
  write_run(b.str(), DumpMode::Stats);
  write_run(c.str(), DumpMode::Tensors, "param_grad/fc.weight", 3.0);
  auto same = compare_paths(a.str(), b.str(), {});
  EXPECT_TRUE(same.agree);
  EXPECT_EQ(same.tensors[0].method, "stats");
  EXPECT_EQ(*same.tensors[0].stat_rel_error, 0.0);
  auto mixed = compare_paths(a.str(), c.str(), {});  // one side stats only -> stats comparison
  EXPECT_FALSE(mixed.agree);
  EXPECT_EQ(mixed.tensors[*mixed.first_divergence].name, "param_grad/fc.weight");
  EXPECT_EQ(mixed.tensors[*mixed.first_divergence].method, "stats");
}

TEST(LossCurves, TextAndJsonLogsWithFirstStepBeyondTolerance) {
  TempDir d("loss");
  std::ofstream(d / "a.jsonl") << "{\"step\":0,\"loss\":2.0}\n{\"step\":1,\"loss\":1.5}\n{\"step\":2,\"loss\":1.0}\n"
                                  "{\"step\":3,\"loss\":\"nan\"}\n";
  std::ofstream(d / "b.txt") << "step,loss\n0,2.0\n1,1.505\n2,1.2\n3,nan\n4,0.9\nthis is junk\n";
  auto a = read_loss_log(d / "a.jsonl");
  auto b = read_loss_log(d / "b.txt");
  EXPECT_EQ(a.points.size(), 4u);
  EXPECT_EQ(b.points.size(), 5u);
  EXPECT_EQ(b.problems.size(), 1u);
  auto c = compare_losses(a, b, 1e-2);
  EXPECT_EQ(c.steps.size(), 4u);
  EXPECT_EQ(c.only_in_b, 1);
  ASSERT_TRUE(c.first_step_beyond.has_value());
  EXPECT_EQ(*c.first_step_beyond, 2);
  EXPECT_NEAR(c.max_rel_diff, 0.2, 1e-12);
  EXPECT_EQ(c.max_rel_step, 2);
  EXPECT_EQ(c.steps[3].rel_diff, 0.0);  // NaN on both sides
  auto r = compare_paths(d / "a.jsonl", d / "b.txt", {});
  EXPECT_EQ(r.input, "loss_logs");
  EXPECT_FALSE(r.agree);
  CompareOptions loose;
  loose.loss_rtol = 0.25;
  EXPECT_FALSE(compare_paths(d / "a.jsonl", d / "b.txt", loose).agree);  // junk line is a problem
  std::ofstream(d / "b.txt") << "0 2.0\n1 1.505\n2 1.2\n";
  EXPECT_TRUE(compare_paths(d / "a.jsonl", d / "b.txt", loose).agree);
}

TEST(CompareReport, JsonCsvHtmlAndConsoleCarryTheResult) {
  TempDir a("cmp"), b("cmp");
  write_run(a.str(), DumpMode::Tensors);
  write_run(b.str(), DumpMode::Tensors, "forward/fc", 3.0);
  auto r = compare_paths(a.str(), b.str(), {});
  auto j = compare_to_json(r);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["agree"], false);
  EXPECT_EQ(j["first_divergence"]["name"], "forward/fc");
  EXPECT_EQ(j["tensors"].size(), 18u);
  EXPECT_TRUE(j["tensors"][0]["metrics"].contains("share_rel_err_below_5e-3"));
  EXPECT_EQ(j["tensors"][0]["a"]["shape"], nlohmann::json({10, 100}));
  EXPECT_EQ(j["loss"]["steps_compared"], 2);
  const std::string csv = compare_to_csv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 19);
  EXPECT_EQ(csv.rfind("step,name,kind,status,method,verdict,exact,", 0), 0u);
  const std::string html = compare_to_html(r);
  for (const char* id : {"id=\"loss-curves\"", "id=\"cosine-profile\"", "id=\"max-error-profile\"", "id=\"divergence\""})
    EXPECT_NE(html.find(id), std::string::npos) << id;
  EXPECT_EQ(html.find("http"), std::string::npos);
  const std::string text = render_compare_console(r);
  EXPECT_NE(text.find("first divergence: step 0 forward/fc"), std::string::npos);
  EXPECT_NE(text.find("verdict: runs DIFFER"), std::string::npos);
}
