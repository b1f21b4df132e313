// Every torch_npu / torch.npu name that `migrate --to npu` writes into code or names in its advice
// exists in torch_npu 2.11's Python sources (parsed by tests/python/torch_npu_names.py, never
// imported).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "test_support.h"
#include "tools/migrate/rule_table.h"

namespace crosstrain::migrate {
namespace {

std::string wheel_dir() { return TORCH_NPU_DIR; }

// torch.npu.X[.Y], torch_npu[.X...] in a text.
std::set<std::string> npu_names(const std::string& text) {
  static const std::regex name(R"(\b(torch\.npu(\.[A-Za-z_]\w*)+|torch_npu(\.[A-Za-z_]\w*)*))");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it)
    out.insert(it->str());
  return out;
}

// Advice that names a torch_npu feature in words; the test holds the words to the names.
const std::vector<std::pair<std::string, std::string>> kWordsForNames = {
    {"torch_npu's mstx", "torch.npu.mstx"},
    {"torch_npu's fused optimizers", "torch_npu.optim"},
    {"torch_npu.profiler", "torch_npu.profiler.profile"},
};

std::set<std::string> emitted_names() {
  std::set<std::string> names;
  for (const auto& rule : rule_table()) {
    const std::string text = expand_template(rule.per_target[static_cast<size_t>(Target::Npu)], Target::Npu, {});
    for (auto& n : npu_names(text)) names.insert(n);
    for (auto& n : npu_names(std::string(rule.message))) names.insert(n);
    for (const auto& [words, name] : kWordsForNames)
      if ((text + " " + std::string(rule.message)).find(words) != std::string::npos) names.insert(name);
  }
  return names;
}

TEST(MigrateNpuNames, TheRuleTableNamesTorchNpuApis) {
  const auto names = emitted_names();
  // Guards the extraction itself: these come from rewrite rules and advice.
  for (const auto* expected : {"torch.npu.is_available", "torch.npu.memory_stats", "torch_npu", "torch.npu.NPUGraph"})
    EXPECT_TRUE(names.count(expected)) << expected;
  for (const auto& [words, name] : kWordsForNames) EXPECT_TRUE(names.count(name)) << "advice no longer says " << words;
}

TEST(MigrateNpuNames, EveryNameExistsInTorchNpu) {
  if (wheel_dir().empty()) GTEST_SKIP() << "the torch_npu reference wheel is not unpacked (scripts/setup.sh)";
  std::string cmd = testing::python() + " " + testing::source_dir() + "/tests/python/torch_npu_names.py " + wheel_dir();
  for (const auto& n : emitted_names()) cmd += " " + n;
  auto r = testing::run_command(cmd);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // The checker itself rejects a name torch_npu lacks.
  auto bad = testing::run_command(testing::python() + " " + testing::source_dir() + "/tests/python/torch_npu_names.py " +
                                  wheel_dir() + " torch.npu.CUDAGraph torch_npu.cuda");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("missing torch.npu.CUDAGraph"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("missing torch_npu.cuda"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace crosstrain::migrate
