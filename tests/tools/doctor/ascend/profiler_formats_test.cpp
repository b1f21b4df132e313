// The recorded names, folders and columns of torch_npu's profiler output
// (tests/data/ascend/torch_npu_profiler_formats.json) hold for the unpacked torch_npu wheel.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "test_support.h"

namespace crosstrain::testing {
namespace {

const std::string kFacts = source_dir() + "/tests/data/ascend/torch_npu_profiler_formats.json";

std::string check(const std::string& facts) {
  return python() + " " + source_dir() + "/tests/python/torch_npu_profiler_facts.py " + TORCH_NPU_DIR + " " + facts;
}

TEST(AscendProfilerFormats, RecordedFactsHoldForTheWheel) {
  if (std::string(TORCH_NPU_DIR).empty()) GTEST_SKIP() << "the torch_npu reference wheel is not unpacked (scripts/setup.sh)";
  auto r = run_command(check(kFacts));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(", 0 mismatches"), std::string::npos) << r.output;
}

TEST(AscendProfilerFormats, AChangedColumnIsCaught) {
  if (std::string(TORCH_NPU_DIR).empty()) GTEST_SKIP() << "the torch_npu reference wheel is not unpacked (scripts/setup.sh)";
  std::ifstream in(kFacts);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string column = "\"Communication(Not Overlapped)\"";
  ASSERT_NE(text.find(column), std::string::npos);
  text.replace(text.find(column), column.size(), "\"Communication (not overlapped)\"");
  auto dir = scratch_dir("profiler_facts");
  std::ofstream(dir / "facts.json") << text;
  auto r = run_command(check((dir / "facts.json").string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("TraceStepTimeParser.title"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace crosstrain::testing
