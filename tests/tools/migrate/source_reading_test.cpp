// Reading what users bring: PEP 263 encodings, NUL bytes, nesting up to CPython's limits, and
// large literal data that must not cost a tree node per number.
#include "tools/migrate/data_literals.h"
#include "tools/migrate/file_migration.h"
#include "tools/migrate/python_syntax.h"

#include <gtest/gtest.h>

using namespace crosstrain::migrate;

TEST(SourceEncoding, CodingLineIsHonouredAndTheFileWrittenBackInIt) {
  // A latin-1 file with its coding line: é is 0xE9, not UTF-8.
  const std::string src = "# -*- coding: latin-1 -*-\n\"\"\"Caf\xe9.\"\"\"\nimport torch\nx = torch.ones(2).cuda()  # \xe9t\xe9\n";
  FileMigration m = migrate_source("f.py", src, Target::Cpu);
  ASSERT_EQ(m.status, FileStatus::Migrated) << m.detail;
  EXPECT_EQ(m.encoding, "iso-8859-1");
  EXPECT_EQ(m.bytes_to_write(),
            "# -*- coding: latin-1 -*-\n\"\"\"Caf\xe9.\"\"\"\nimport torch\nx = torch.ones(2).to(\"cpu\")  # \xe9t\xe9\n");
  EXPECT_EQ(m.changes.at(0).start_line, 4u);
  // Without the coding line the same bytes are not UTF-8: unreadable, never "nothing found".
  FileMigration bare = migrate_source("f.py", src.substr(src.find('\n') + 1), Target::Cpu);
  EXPECT_EQ(bare.status, FileStatus::NotUtf8);
  EXPECT_NE(bare.detail.find("PEP 263"), std::string::npos) << bare.detail;
}

TEST(SourceEncoding, DeclarationsAsPythonReadsThem) {
  EXPECT_EQ(declared_encoding("# -*- coding: latin-1 -*-\n"), "iso-8859-1");
  EXPECT_EQ(declared_encoding("#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\n"), "cp1252");
  EXPECT_EQ(declared_encoding("# coding=utf_8\n"), "utf-8");
  EXPECT_EQ(declared_encoding("import os\n# coding: latin-1\n"), "");  // line 2 counts only below a comment
  EXPECT_EQ(declared_encoding("\n\n# coding: latin-1\n"), "");        // line 3 never counts
  FileMigration unknown = migrate_source("f.py", "# coding: no-such-codec\nx = 1\n", Target::Cpu);
  EXPECT_EQ(unknown.status, FileStatus::NotUtf8);
  EXPECT_NE(unknown.detail.find("no-such-codec"), std::string::npos) << unknown.detail;
}

TEST(SourceEncoding, NulByteIsNamedWithItsLine) {
  const std::string src = std::string("import torch\nx = torch.ones(2).cuda()\ny = \"a") + '\0' + "b\"\n";
  FileMigration m = migrate_source("f.py", src, Target::DeviceAgnostic);
  EXPECT_EQ(m.status, FileStatus::NotUtf8);
  EXPECT_NE(m.detail.find("NUL byte on line 3"), std::string::npos) << m.detail;
}

// CPython accepts 99 nested indented blocks (100 is "too many levels of indentation"); the
// grammar's scanner kept indentation widths in one byte and failed past column 255.
TEST(SourceNesting, NinetyNineIndentedBlocksParse) {
  std::string src = "import torch\n";
  for (int i = 0; i < 99; ++i) src += std::string(4 * i, ' ') + (i % 3 == 0 ? "if x:\n" : i % 3 == 1 ? "for a in b:\n" : "while y:\n");
  src += std::string(4 * 99, ' ') + "z = torch.ones(1).cuda()\n";
  src += "w = torch.ones(1).cuda()\n";  // the dedent back to column 0 is read right too
  FileMigration m = migrate_source("f.py", src, Target::Cpu);
  ASSERT_EQ(m.status, FileStatus::Migrated) << m.detail;
  EXPECT_EQ(m.changes.size(), 2u);
  EXPECT_NE(m.migrated.find(std::string(4 * 99, ' ') + "z = torch.ones(1).to(\"cpu\")\n"), std::string::npos);
}

TEST(SourceNesting, BracketsUpToCPythonsLimitParse) {
  // CPython's tokenizer allows 199 nested brackets (200 is "too many nested parentheses").
  std::string src = "import torch\nx = " + std::string(199, '(') + "torch.ones(1).cuda()" + std::string(199, ')') + "\n";
  FileMigration m = migrate_source("f.py", src, Target::Cpu);
  ASSERT_EQ(m.status, FileStatus::Migrated) << m.detail;
}

TEST(DataLiterals, LargeDataIsBlankedKeepingOffsetsAndLines) {
  std::string data = "W = [\n";
  for (int i = 0; i < 2000; ++i) data += "    " + std::to_string(i) + ".5e-3, -" + std::to_string(i) + ", 'w" + std::to_string(i) + "',\n";
  data += "]\n";
  const std::string src = "import torch\n" + data + "x = torch.ones(1).cuda()\n";
  std::string elided = elide_data_literals(src);
  ASSERT_EQ(elided.size(), src.size());
  EXPECT_EQ(std::count(elided.begin(), elided.end(), '\n'), std::count(src.begin(), src.end(), '\n'));
  EXPECT_EQ(elided.find("0.5e-3"), std::string::npos);
  EXPECT_EQ(elided.substr(elided.size() - 25), src.substr(src.size() - 25));
  PythonSyntax syntax(src);
  EXPECT_FALSE(syntax.has_errors());
  EXPECT_LT(ts_node_descendant_count(syntax.root()), 200u);  // not one node per number
  FileMigration m = migrate_source("f.py", src, Target::Cpu);
  ASSERT_EQ(m.status, FileStatus::Migrated) << m.detail;
  EXPECT_EQ(m.migrated, "import torch\n" + data + "x = torch.ones(1).to(\"cpu\")\n");
}

TEST(DataLiterals, CodeAndDeviceStringsAreNeverBlanked) {
  std::string rows;
  for (int i = 0; i < 1000; ++i) rows += std::to_string(i) + ", ";
  const char* kept[] = {"[" "%s" "torch.ones(1).cuda()]", "[" "%s" "'cuda']", "{'device': 'CUDA', " "%s" "}",
                        "[" "%s" "f'{x}']", "(" "%s" "NCCL)", "[" "%s" "x]"};
  for (const char* shape : kept) {
    std::string code(shape);
    code.replace(code.find("%s"), 2, rows);
    EXPECT_EQ(elide_data_literals("y = " + code + "\n"), "") << shape;
  }
  // An f-string that reuses its quote inside a replacement field (Python 3.12) does not throw the
  // scanner off: the data after it is still found.
  std::string after = "s = f\"{d[\"k\"]}\"\nz = [" + rows + "]\n";
  EXPECT_NE(elide_data_literals(after), "");
  // Unbalanced brackets: nothing blanked, the parser reports the error itself.
  EXPECT_EQ(elide_data_literals("y = [" + rows + "\n"), "");
}
