#include "tools/migrate/unified_diff.h"

#include <gtest/gtest.h>

using namespace crosstrain::migrate;

TEST(UnifiedDiff, EqualTextsGiveNothing) { EXPECT_EQ(unified_diff("a\nb\n", "a\nb\n", "a", "b"), ""); }

TEST(UnifiedDiff, OneChangedLineWithContext) {
  std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  std::string after = "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n";
  EXPECT_EQ(unified_diff(before, after, "a/f.py", "b/f.py"),
            "--- a/f.py\n+++ b/f.py\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n");
}

TEST(UnifiedDiff, InsertionAndSeparateHunks) {
  std::string before;
  for (int i = 1; i <= 20; ++i) before += std::to_string(i) + "\n";
  std::string after = before;
  after.insert(after.find("2\n"), "new\n");     // after line 1
  after.replace(after.find("18\n"), 3, "X\n");  // line 18
  EXPECT_EQ(unified_diff(before, after, "a", "b"),
            "--- a\n+++ b\n@@ -1,4 +1,5 @@\n 1\n+new\n 2\n 3\n 4\n@@ -15,6 +16,6 @@\n 15\n 16\n 17\n-18\n+X\n 19\n 20\n");
}

TEST(UnifiedDiff, MissingFinalNewlineIsMarked) {
  EXPECT_EQ(unified_diff("a", "b", "x", "y"),
            "--- x\n+++ y\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n");
}

TEST(UnifiedDiff, FromEmpty) { EXPECT_EQ(unified_diff("", "a\n", "x", "y"), "--- x\n+++ y\n@@ -0,0 +1,1 @@\n+a\n"); }

// The diff made from known edits equals the general one, including inserted lines, edits that
// span lines, a last line without a newline and changes close enough to share a hunk.
TEST(UnifiedDiff, FromEditsMatchesTheGeneralDiff) {
  const std::string before = "import torch\na = 1\nx = y.cuda()\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\nh = 8\n"
                             "z = f(\n  w.cuda())\nlast = q.cuda()";
  std::vector<crosstrain::migrate::DiffEdit> edits = {
      {13, 13, "dev = 1\n"},  // a whole line inserted before `a = 1`
  };
  // The edits keep views: their texts are the literals themselves, never temporaries.
  auto edit_at = [&](const std::string& needle, std::string_view text) {
    auto at = static_cast<uint32_t>(before.find(needle));
    edits.push_back({at, at + static_cast<uint32_t>(needle.size()), text});
  };
  edit_at("y.cuda()", "y.to(dev)");
  edit_at("w.cuda()", "w.to(dev)");
  edit_at("q.cuda()", "q.to(dev)");
  std::string after = before;
  for (auto it = edits.rbegin(); it != edits.rend(); ++it)
    after.replace(it->start, it->end - it->start, std::string(it->text));
  EXPECT_EQ(crosstrain::migrate::unified_diff_of_edits(before, after, edits, "a/f.py", "b/f.py"),
            crosstrain::migrate::unified_diff(before, after, "a/f.py", "b/f.py"));
}
