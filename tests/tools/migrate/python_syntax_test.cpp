// The parser wrapper: error detection, and incremental reparsing (used to check every rewrite)
// giving the same tree as a fresh parse.
#include "tools/migrate/python_syntax.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

using namespace crosstrain::migrate;

namespace {

std::string tree_string(const PythonSyntax& s) {
  char* raw = ts_node_string(s.root());
  std::string out(raw);
  std::free(raw);
  return out;
}

std::string with_edits(std::string_view src, const std::vector<TextEdit>& edits) {
  std::string out;
  size_t pos = 0;
  for (const auto& e : edits) {
    out.append(src.substr(pos, e.start - pos));
    out.append(e.text);
    pos = e.end;
  }
  out.append(src.substr(pos));
  return out;
}

TEST(PythonSyntax, GrammarAbiIsOneTheCoreReads) {
  EXPECT_GE(python_grammar_abi_version(), static_cast<unsigned>(TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION));
  EXPECT_LE(python_grammar_abi_version(), static_cast<unsigned>(TREE_SITTER_LANGUAGE_VERSION));
}

TEST(PythonSyntax, ErrorsAndTheirLine) {
  PythonSyntax good("def f(x):\n    return x\n");
  EXPECT_FALSE(good.has_errors());
  EXPECT_EQ(good.first_error_line(), 0u);
  PythonSyntax bad("x = 1\ny = (2,\ndef g(:\n  pass\n");
  EXPECT_TRUE(bad.has_errors());
  EXPECT_GE(bad.first_error_line(), 2u);
}

TEST(PythonSyntax, IncrementalReparseMatchesAFreshParse) {
  const std::string src =
      "import torch\n\ndef f(model, x):\n    y = x.cuda()  # note\n    z = torch.cuda.is_available()\n"
      "    return model(\n        y,\n    ).cuda(0, True)\n";
  auto at = [&](const char* needle) { return static_cast<uint32_t>(src.find(needle)); };
  std::vector<std::vector<TextEdit>> cases;
  std::vector<std::unique_ptr<std::string>> texts;
  auto text = [&](std::string t) -> std::string_view {
    texts.push_back(std::make_unique<std::string>(std::move(t)));
    return *texts.back();
  };
  cases.push_back(std::vector<TextEdit>{{at("cuda()"), at("cuda()") + 4, text("to")}, {at("cuda()") + 5, at("cuda()") + 5, text("device")}});
  cases.push_back(std::vector<TextEdit>{{at("\n\ndef") + 1, at("\n\ndef") + 1, text("device = torch.device(\"cpu\")\n")},
                   {at("torch.cuda.is"), at("torch.cuda.is") + 10, text("torch.accelerator")}});
  cases.push_back(std::vector<TextEdit>{{at("cuda(0"), at("cuda(0") + 4, text("to")},
                   {at("0, True"), at("0, True"), text("torch.device(\"cpu\", ")},
                   {at("0, True") + 1, at("0, True") + 1, text(")")},
                   {at("True)"), at("True)"), text("non_blocking=\n  ")}});
  cases.push_back(std::vector<TextEdit>{TextEdit{at("x):"), at("x):") + 2, text("x,(")}});  // an error
  for (const auto& edits : cases) {
    PythonSyntax before(src);
    std::string after = with_edits(src, edits);
    PythonSyntax incremental(after, before, edits);
    PythonSyntax fresh(after);
    EXPECT_EQ(incremental.has_errors(), fresh.has_errors()) << after;
    EXPECT_EQ(tree_string(incremental), tree_string(fresh)) << after;
  }
  PythonSyntax before(src);
  std::string broken = with_edits(src, cases.back());
  EXPECT_TRUE(PythonSyntax(broken, before, cases.back()).has_errors());
}

}  // namespace
