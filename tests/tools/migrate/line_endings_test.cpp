// Line endings as Python reads them: CR-only (old Mac) and mixed files parse, keep their lines,
// and come out in their own style.
#include "tools/migrate/file_migration.h"
#include "tools/migrate/line_endings.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace crosstrain::migrate;

namespace {

std::string with_endings(std::string text, std::string_view newline) {
  std::string out;
  for (char c : text) {
    if (c == '\n') out += newline;
    else out += c;
  }
  return out;
}

const std::string kScript =
    "import torch\n"
    "def main():\n"
    "    model = torch.nn.Linear(2, 2).cuda()\n"
    "    if True:\n"
    "        torch.backends.cudnn.benchmark = True\n"
    "    return model\n"
    "main()\n";

TEST(LineEndings, CrOnlyFileIsMigratedInItsOwnStyle) {
  FileMigration m = migrate_source("mac.py", with_endings(kScript, "\r"), Target::DeviceAgnostic);
  ASSERT_EQ(m.status, FileStatus::Migrated) << m.detail;
  FileMigration lf = migrate_source("unix.py", kScript, Target::DeviceAgnostic);
  ASSERT_EQ(lf.status, FileStatus::Migrated);
  // The same rewrite, the inserted device line included, with every line ending a CR.
  EXPECT_EQ(m.migrated, with_endings(lf.migrated, "\r"));
  EXPECT_EQ(m.migrated.find('\n'), std::string::npos);
  // Lines are Python's lines: the cudnn note is on line 5.
  ASSERT_EQ(m.findings.size(), 1u);
  EXPECT_EQ(m.findings[0].line, 5u);
  EXPECT_EQ(m.changes.back().start_line, 3u);
}

TEST(LineEndings, CrOnlyFileThatIsAlreadyPortableIsUnchanged) {
  FileMigration m = migrate_source("mac.py", with_endings("import torch\nx = torch.ones(2)\nprint(x)\n", "\r"),
                                   Target::Cpu);
  EXPECT_EQ(m.status, FileStatus::Unchanged) << m.detail;
}

TEST(LineEndings, MixedEndingsKeepEachLineAndAddTheMostFrequent) {
  // Two CRs, one LF, one CRLF: lines the rewrite adds end in CR; the others keep theirs.
  const std::string src = "import torch\rx = torch.ones(2)\ny = x.cuda()\r\nprint(y)\r";
  FileMigration m = migrate_source("mixed.py", src, Target::Npu);
  ASSERT_EQ(m.status, FileStatus::Migrated) << m.detail;
  EXPECT_EQ(m.migrated, "import torch\rimport torch_npu\rx = torch.ones(2)\ny = x.to(\"npu\")\r\nprint(y)\r");
  FileMigration again = migrate_source("mixed.py", m.migrated, Target::Npu);
  EXPECT_EQ(again.status, FileStatus::Unchanged);
}

TEST(LineEndings, StyleIsTheMostFrequentEnding) {
  EXPECT_FALSE(line_endings_of("a\nb\r\n").lone_cr);
  EXPECT_EQ(line_endings_of("a\r\nb\r\nc\n").newline, "\r\n");
  EXPECT_EQ(line_endings_of("a\rb\rc\r\n").newline, "\r");
  EXPECT_EQ(line_endings_of("").newline, "\n");
  EXPECT_EQ(with_lone_cr_as_lf("a\rb\r\nc\r"), "a\nb\r\nc\n");
  EXPECT_EQ(line_breaks("a\rb\r\nc\nd"), 3u);
}

TEST(LineEndings, CodingLineOnTheSecondLineOfACrOnlyFile) {
  EXPECT_EQ(declared_encoding("#!/usr/bin/env python\r# -*- coding: latin-1 -*-\rx = 1\r"), "iso-8859-1");
  EXPECT_EQ(declared_encoding("#!/usr/bin/env python\r\n# -*- coding: latin-1 -*-\r\n"), "iso-8859-1");
}

}  // namespace
