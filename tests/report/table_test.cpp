#include "report/table.h"
#include "report/terminal.h"
#include "report/units.h"

#include <gtest/gtest.h>

#include <limits>

using namespace crosstrain::report;

TEST(Table, AlignsColumnsAndRejectsRaggedRows) {
  Table t({"metric", "FP32", "AMP"});
  t.add_row({"throughput", "545.0", "1254.0"});
  t.add_row({"peak memory", "5.52 GiB", "2.86 GiB"});
  const std::string out = t.render();
  EXPECT_EQ(out,
            "metric           FP32       AMP\n"
            "-------------------------------\n"
            "throughput      545.0    1254.0\n"
            "peak memory  5.52 GiB  2.86 GiB\n");
  EXPECT_THROW(t.add_row({"only one"}), std::invalid_argument);
}

TEST(Units, FormatsAndSaysNaForMissing) {
  EXPECT_EQ(format_bytes(std::nullopt), "n/a");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(int64_t{5651} << 20), "5.52 GiB");
  EXPECT_EQ(format_change(545.0, 1254.0), "+130.1%");
  EXPECT_EQ(format_change(0.0, 1.0), "n/a");
  EXPECT_EQ(format_count(25557032), "25,557,032");
  EXPECT_EQ(format_percent(0.1234), "12.3%");
  EXPECT_EQ(format_ms(117.4), "117.4 ms");
}

// Figures read from others' files can be absurd (1e308, a 300-digit number): they print with their
// unit in scientific notation, never as 64 digits cut off without one.
TEST(Units, AbsurdFiguresKeepTheirUnit) {
  EXPECT_EQ(format_us(12.34), "12.3 us");
  EXPECT_EQ(format_us(4560), "4.560 ms");
  EXPECT_EQ(format_us(1.5e6), "1.500 s");
  EXPECT_EQ(format_us(1e20), "100000000000000.000 s");  // just under the limit: still fixed point
  EXPECT_EQ(format_us(1e308), "1.00e+302 s");
  EXPECT_EQ(format_us(-1e308), "-1.00e+302 s");
  EXPECT_EQ(format_ms(1e308), "1.00e+308 ms");
  EXPECT_EQ(format_ms(0.25), "0.250 ms");
  EXPECT_EQ(format_fixed(1e308, 3), "1.00e+308");
  EXPECT_EQ(format_fixed(-1e300, 3), "-1.00e+300");
  EXPECT_EQ(format_fixed(0.35, 3), "0.350");
  EXPECT_EQ(format_fixed(std::numeric_limits<double>::infinity(), 3), "inf");
  EXPECT_EQ(format_percent(-1e306), "-1.00e+308%");
  EXPECT_EQ(format_change(1.0, 1e300), "+1.00e+302%");
  EXPECT_EQ(format_change(2.0, 1.0), "-50.0%");
  for (double v : {1e21, 9.99e307, std::numeric_limits<double>::max()}) {
    for (const std::string& s : {format_us(v), format_ms(v), format_fixed(v, 3)}) {
      EXPECT_LT(s.size(), 20u) << s;
      EXPECT_NE(s.find("e+"), std::string::npos) << s;
    }
    EXPECT_LT(format_percent(v).size(), 20u) << format_percent(v);  // "1.00e+23%", "inf%"
  }
}

// A name read from someone else's file reaches the terminal as text: ESC, BEL, the 8-bit CSI
// (U+009B) and bytes that are not UTF-8 are shown as escapes, never obeyed; UTF-8 text and
// backslashes stay as they are.
TEST(TerminalSafe, ControlCharactersBecomeVisibleEscapes) {
  EXPECT_EQ(terminal_safe("x = \x1b]0;owned\x07y"), "x = \\x1b]0;owned\\x07y");
  EXPECT_EQ(terminal_safe("a\x1b[2Jb\x7f"), "a\\x1b[2Jb\\x7f");
  EXPECT_EQ(terminal_safe("\xc2\x9b" "31m"), "\\u009b31m");
  EXPECT_EQ(terminal_safe("\x9b" "31m \xff"), "\\x9b31m \\xff");
  EXPECT_EQ(terminal_safe("line 1\n\tline 2"), "line 1\n\tline 2");
  EXPECT_EQ(terminal_safe("line 1\n\tline 2", false), "line 1\\x0a\\x09line 2");
  EXPECT_EQ(terminal_safe("µs × C:\\path \xf0\x9f\x99\x82"), "µs × C:\\path \xf0\x9f\x99\x82");
  EXPECT_EQ(terminal_safe("\xe0\x80\x80 \xed\xa0\x80"), "\\xe0\\x80\\x80 \\xed\\xa0\\x80");  // overlong, surrogate
  EXPECT_EQ(terminal_safe(std::string("nul\0end", 7)), "nul\\x00end");
}

// Line and paragraph separators break a table row; bidirectional overrides, embeddings, isolates
// and marks reorder what follows on the line ("evil\u202egnp.exe" shows as "evilexe.png"). They
// print as \uNNNN like U+0085; other text outside ASCII (Arabic, Hebrew, CJK) is kept.
TEST(TerminalSafe, CharactersThatMoveOrReorderTextBecomeEscapes) {
  EXPECT_EQ(terminal_safe("a\u0085b\u2028c\u2029d"), "a\\u0085b\\u2028c\\u2029d");
  EXPECT_EQ(terminal_safe("evil\u202egnp.exe"), "evil\\u202egnp.exe");
  for (const char* hex : {"202a", "202b", "202c", "202d", "2066", "2067", "2068", "2069", "200e", "200f", "061c"}) {
    const unsigned cp = static_cast<unsigned>(std::stoul(hex, nullptr, 16));
    std::string utf8 = cp < 0x800 ? std::string{static_cast<char>(0xC0 | cp >> 6), static_cast<char>(0x80 | (cp & 0x3F))}
                                  : std::string{static_cast<char>(0xE0 | cp >> 12), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                                                static_cast<char>(0x80 | (cp & 0x3F))};
    EXPECT_EQ(terminal_safe("x" + utf8 + "y"), std::string("x\\u") + hex + "y");
  }
  EXPECT_EQ(terminal_safe("x\u2067y", false), "x\\u2067y");
  // Their neighbours are ordinary text.
  const std::string kept = "\u2027 \u2030 \u2065 \u206a \u200d \u061b \u05d0\u05d1 \u0627 \u4e2d";
  EXPECT_EQ(terminal_safe(kept), kept);
}

TEST(Table, CellsAreEscapedOnOneLineAndStayAligned) {
  Table t({"name", "n"});
  t.add_row({"k\x1b[31m", "1"});
  t.add_row({"two\nlines", "22"});
  EXPECT_EQ(t.render(),
            "name           n\n"
            "----------------\n"
            "k\\x1b[31m      1\n"
            "two\\x0alines  22\n");
  EXPECT_EQ(t.data()[0][0], "k\x1b[31m");  // the data stays as given
}
