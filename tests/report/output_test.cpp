#include "report/html_page.h"
#include "report/output.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace crosstrain::report;

TEST(Csv, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_document({"a", "b"}, {{"1", "x,y"}}), "a,b\n1,\"x,y\"\n");
}

TEST(Json, WritesAtomicallyAndSurvivesBadUtf8) {
  auto dir = std::filesystem::temp_directory_path() / "crosstrain_output_test";
  std::filesystem::create_directories(dir);
  auto path = (dir / "r.json").string();
  nlohmann::json doc = {{"name", std::string("bad\xff")}, {"v", 3}};
  write_json(doc, path);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto back = nlohmann::json::parse(ss.str());
  EXPECT_EQ(back["v"], 3);
  EXPECT_THROW(write_json(doc, (dir / "no/such/dir/x.json").string()), std::runtime_error);
  std::filesystem::remove_all(dir);
}

TEST(Html, ChartsCarryOneMarkPerDatumAndEscapeText) {
  HtmlPage page("t <1>");
  page.add_pie("pie", "types", {{"conv", 3}, {"matmul", 1}, {"zero", 0}});
  page.add_stacked_bars("steps", "breakdown", {"kernel", "idle"}, {{"s1", {1, 2}}, {"s2", {3, 0}}}, "us");
  const std::string html = page.render();
  EXPECT_NE(html.find("<title>t &lt;1&gt;</title>"), std::string::npos);
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t p = html.find(needle); p != std::string::npos; p = html.find(needle, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("class=\"mark\""), 2u + 3u);  // two non-empty slices, three non-empty segments
  EXPECT_EQ(html.find("http"), std::string::npos);  // self-contained
}
