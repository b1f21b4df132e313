// `--backend-lib` with torch_npu's real libtorch_npu.so on a machine without CANN, and
// `doctor --ascend`, through the binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "test_support.h"

namespace crosstrain::testing {
namespace {

std::string torch_npu_lib() {
  const std::string dir = TORCH_NPU_DIR;
  return dir.empty() ? "" : dir + "/torch_npu/lib/libtorch_npu.so";
}

const char* const kCann[] = {"libascendcl.so", "libhccl.so", "libge_runner.so", "libgraph.so", "libacl_op_compiler.so",
                             "libacl_tdt_channel.so"};

// Runs without any Ascend variable of the caller's environment.
std::string clean(const std::string& cmd) {
  return "env -u ASCEND_TOOLKIT_HOME -u ASCEND_HOME_PATH -u ASCEND_OPP_PATH " + cmd;
}

TEST(AscendCli, BackendLibWithoutCannIsOneClearMessage) {
  if (torch_npu_lib().empty()) GTEST_SKIP() << "the torch_npu reference wheel is not unpacked (scripts/setup.sh)";
  for (const std::string& cmd : {binary() + " train --backend-lib " + torch_npu_lib() + " --device npu:0 --steps 2 --warmup-steps 1",
                                 binary() + " doctor --python '' --backend-lib " + torch_npu_lib()}) {
    auto r = run_command(cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    for (const char* lib : kCann) EXPECT_NE(r.output.find(lib), std::string::npos) << lib << " not named:\n" << r.output;
    EXPECT_NE(r.output.find("source its set_env.sh"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("cannot open shared object file"), std::string::npos) << "raw dlerror:\n" << r.output;
  }
  // train reports it on exactly one line.
  auto train = run_command(binary() + " train --backend-lib " + torch_npu_lib() + " --device npu:0 --steps 2 --warmup-steps 1");
  size_t lines = 0;
  for (size_t pos = train.output.find("cannot load backend library"); pos != std::string::npos;
       pos = train.output.find("cannot load backend library", pos + 1))
    ++lines;
  EXPECT_EQ(lines, 1u) << train.output;
  EXPECT_EQ(std::count(train.output.begin(), train.output.end(), '\n'), 1) << train.output;
}

TEST(AscendCli, DoctorWithTorchNpusLibraryChecksItsPairing) {
  if (torch_npu_lib().empty()) GTEST_SKIP() << "the torch_npu reference wheel is not unpacked (scripts/setup.sh)";
  auto r = run_command(clean(binary() + " doctor --python '' --json - --backend-lib " + torch_npu_lib()), false);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  auto j = nlohmann::json::parse(r.output);
  std::string version, pairing, library;
  for (const auto& c : j["checks"]) {
    if (c["name"] == "torch_npu") version = c["value"];
    if (c["name"] == "libtorch (crosstrain) / torch_npu") pairing = c["status"];
    if (c["name"] == "torch_npu library") library = c["value"];
  }
  EXPECT_NE(version.find("2.11.0.post3"), std::string::npos) << r.output;
  EXPECT_EQ(pairing, "ok") << r.output;
  EXPECT_NE(library.find("libhccl.so"), std::string::npos) << r.output;
}

TEST(AscendCli, DoctorAscendFailsWithoutTheStack) {
  auto r = run_command(clean(binary() + " doctor --ascend --python '' --json -"), false);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  auto j = nlohmann::json::parse(r.output);
  bool toolkit = false;
  for (const auto& c : j["checks"])
    if (c["name"] == "CANN toolkit") toolkit = c["status"] == "missing" && c["required"] == true && !c["hint"].get<std::string>().empty();
  EXPECT_TRUE(toolkit) << r.output;
}

TEST(AscendCli, DoctorChecksAscendWhenItIsDetectedWithoutFailing) {
  auto plain = run_command(clean(binary() + " doctor --python ''"));
  EXPECT_EQ(plain.output.find("CANN toolkit"), std::string::npos) << "Ascend rows on a machine without Ascend:\n" << plain.output;
  auto detected = run_command(clean("ASCEND_TOOLKIT_HOME=/nonexistent/latest " + binary() + " doctor --python ''"));
  EXPECT_NE(detected.output.find("CANN toolkit"), std::string::npos) << detected.output;
  EXPECT_NE(detected.output.find("/nonexistent/latest does not exist"), std::string::npos) << detected.output;
  EXPECT_EQ(detected.exit_code, plain.exit_code) << "detected Ascend findings are advice, not failures";
}

}  // namespace
}  // namespace crosstrain::testing
