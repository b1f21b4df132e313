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
