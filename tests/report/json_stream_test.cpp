#include "report/json_stream.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "report/json_scanner.h"
#include "report/json_tree.h"

using crosstrain::report::JsonFormatError;
using crosstrain::report::StreamedJson;
using nlohmann::json;

namespace {

std::string rendered(const StreamedJson& doc, size_t* pieces = nullptr) {
  std::string out;
  size_t n = 0;
  crosstrain::report::render_json_streamed(doc, [&](const char* d, size_t size) {
    out.append(d, size);
    ++n;
  });
  if (pieces) *pieces = n;
  return out;
}

json row(size_t i) {
  return {{"index", i}, {"name", "forward/layer" + std::to_string(i)}, {"stats", {{"max", 1.5 * i}, {"shape", {8, i}}}},
          {"empty", json::array()}, {"none", json::object()}, {"bytes", std::string("\xff\xfe", 2)}};
}

}  // namespace

// The streamed text is byte for byte what write_json() writes for the whole tree, at the root,
// nested in arrays and objects, for empty and long arrays, with invalid UTF-8 replaced.
TEST(JsonStream, TextIsTheWholeTreesPrettyDump) {
  StreamedJson doc;
  doc.skeleton = {{"schema_version", 1}, {"tensors", json::array()}, {"a/b~c", "x"},
                  {"ranks", json::array({{{"rank", 0}, {"report", {{"tensors", nullptr}, {"n", 2.5}}}},
                                         {{"rank", 1}, {"report", {{"tensors", nullptr}}}}})},
                  {"loss", {{"curve", json::array()}, {"rtol", 0.01}}}};
  doc.arrays = {{"/tensors", 3000, row},
                {"/ranks/0/report/tensors", 2, row},
                {"/ranks/1/report/tensors", 0, row},
                {"/loss/curve", 1, [](size_t) { return json::array({1, 2}); }}};
  size_t pieces = 0;
  const std::string text = rendered(doc, &pieces);
  const json whole = crosstrain::report::materialize(doc);
  EXPECT_EQ(text, whole.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  EXPECT_EQ(whole["tensors"].size(), 3000u);
  EXPECT_EQ(whole["ranks"][1]["report"]["tensors"], json::array());
  EXPECT_GT(pieces, 1u);  // written as it was made, not in one piece at the end
}

TEST(JsonStream, APointerToNothingIsRefused) {
  StreamedJson doc{{{"a", 1}}, {{"/b/c", 1, row}}};
  EXPECT_THROW(rendered(doc), std::invalid_argument);
}

// A tree is built only after the text is validated and costed: depth and density cannot take the
// memory (16 MiB of '[' used to cost 1.3 GB as a tree).
TEST(JsonTree, DeepOrDenseDocumentsAreRefusedBeforeATreeIsBuilt) {
  const std::string deep = std::string(1 << 20, '[');
  try {
    crosstrain::report::parse_json_tree(deep, "side.json", uint64_t{1} << 30);
    ADD_FAILURE() << "parsed";
  } catch (const JsonFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("side.json: byte 257: JSON nested deeper than 256 levels"), std::string::npos)
        << e.what();
  }
  std::string dense = "[";
  for (int i = 0; i < 100000; ++i) dense += i ? ",[]" : "[]";
  dense += "]";
  EXPECT_GT(crosstrain::report::json_tree_bytes(dense, "x"), 10 * dense.size());
  try {
    crosstrain::report::parse_json_tree(dense, "dense.json", 4 * dense.size());
    ADD_FAILURE() << "parsed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("dense.json: its JSON tree would take about"), std::string::npos) << e.what();
  }
  const json ok = crosstrain::report::parse_json_tree(R"({"a": [1, 2, {"b": "c"}]})", "ok.json", 1 << 20);
  EXPECT_EQ(ok["a"][2]["b"], "c");
  EXPECT_THROW(crosstrain::report::parse_json_tree("{\"a\": 1} x", "t.json", 1 << 20), JsonFormatError);
}

// 19-digit integers (nanosecond timestamps) are read exactly, not through a double.
TEST(JsonScanner, NineteenDigitIntegersAreExact) {
  const std::string doc = "1700000000000000123 -1700000000000000123 9223372036854775807";
  crosstrain::report::JsonScanner js(doc.c_str(), doc.size(), "t.json");
  EXPECT_EQ(js.read_number().whole, 1700000000000000123);
  EXPECT_EQ(js.read_int(), -1700000000000000123);
  EXPECT_THROW(js.read_int(), JsonFormatError);  // beyond 9e18: out of range, as before
}
