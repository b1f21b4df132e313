#include "report/json_scanner.h"

#include <gtest/gtest.h>

#include <string>

using crosstrain::report::JsonFormatError;
using crosstrain::report::JsonScanner;

namespace {

// The scanner keeps a pointer into `s`: the string must outlive it, so temporaries are refused.
JsonScanner scan(const std::string& s) { return JsonScanner(s.c_str(), s.size(), "t.json"); }
JsonScanner scan(std::string&& s) = delete;

}  // namespace

TEST(JsonScanner, StringsWithEscapesDecodeToUtf8) {
  std::string doc = R"(  "a\"b\\c\u00e9\ud83d\ude00\n" "plain")";
  auto js = scan(doc);
  EXPECT_EQ(js.read_string(), "a\"b\\c\xC3\xA9\xF0\x9F\x98\x80\n");
  EXPECT_EQ(js.read_string(), "plain");
  EXPECT_TRUE(js.at_end());
}

TEST(JsonScanner, NumbersKeepFractionOfEpochTimestamps) {
  std::string doc = "1700000000000123.457 -12 3e2 \"42.5\"";
  auto js = scan(doc);
  auto n = js.read_number();
  EXPECT_EQ(n.whole, 1700000000000123);
  EXPECT_NEAR(n.fraction, 0.457, 1e-9);
  auto m = js.read_number();
  EXPECT_TRUE(m.integral);
  EXPECT_EQ(m.whole, -12);
  EXPECT_DOUBLE_EQ(js.read_number().value, 300);
  EXPECT_DOUBLE_EQ(js.read_number_or_numeric_string().value, 42.5);
}

TEST(JsonScanner, SkipValidatesNestedValues) {
  std::string good = R"({"a": [1, {"b": null}, true, false, "x"], "c": -0.5e-3})";
  auto js = scan(good);
  js.skip_value();
  EXPECT_TRUE(js.at_end());
  for (std::string bad : {R"({"a": [1, 2})", R"({"a" 1})", R"([1,])", R"({"a": tru})", R"("abc)", "[01]",
                          R"("bad \q escape")", "[1 2]"}) {
    auto b = scan(bad);
    EXPECT_THROW(b.skip_value(), JsonFormatError) << bad;
  }
}

TEST(JsonScanner, ErrorsCarryFileAndByteOffset) {
  std::string doc = R"({"key": 12, "other" 5})";
  auto js = scan(doc);
  try {
    js.skip_value();
    FAIL() << "no error";
  } catch (const JsonFormatError& e) {
    EXPECT_EQ(e.offset(), 20u);
    EXPECT_NE(std::string(e.what()).find("t.json: byte 20: expected ':'"), std::string::npos) << e.what();
  }
}

TEST(JsonScanner, SkipToleratesPythonNanAndInfinity) {
  std::string doc = "[NaN, Infinity, -Infinity, 1]";
  auto js = scan(doc);
  js.skip_value();
  EXPECT_TRUE(js.at_end());
  const std::string nan_typo = "[Nan]";
  auto bad = scan(nan_typo);
  EXPECT_THROW(bad.skip_value(), JsonFormatError);
  const std::string nan = "NaN";
  auto num = scan(nan);
  EXPECT_THROW(num.read_number(), JsonFormatError);  // never as a time
}

// torch 2.4 can write garbage bytes, control characters among them, into a python_function name
// (pytorch/pytorch#136180): kept, in read and skipped strings alike; the end of the buffer inside
// a string is still a truncation.
TEST(JsonScanner, RawControlBytesInsideStringsAreKept) {
  const std::string doc = "[\"torch/_inductor/config.py(0): \x01\x1f\t\", \"a\nb\\n\x02\"]";
  auto js = scan(doc);
  js.skip_value();
  EXPECT_TRUE(js.at_end());
  const std::string strings("\"x\x01y\" \"\x02\\n\0z\"", 13);
  auto rs = scan(strings);
  EXPECT_EQ(rs.read_string(), "x\x01y");
  EXPECT_EQ(rs.read_string(), std::string("\x02\n\0z", 4));
  EXPECT_TRUE(rs.at_end());
  const std::string cut = "\"abc\x01";
  auto t = scan(cut);
  try {
    t.skip_value();
    FAIL() << "no error";
  } catch (const JsonFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(JsonScanner, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string doc(100000, '[');
  auto js = scan(doc);
  EXPECT_THROW(js.skip_value(), JsonFormatError);
}

TEST(JsonScanner, CompactValueDropsWhitespaceOutsideStrings) {
  std::string doc = R"([ [2, 3] , [ ], "a b" ])";
  auto js = scan(doc);
  EXPECT_EQ(js.read_compact_value(), R"([[2,3],[],"a b"])");
}
