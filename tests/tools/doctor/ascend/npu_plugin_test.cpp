// libcrosstrain_npu.so, built against the torch_npu wheel: it links to the real libtorch_npu.so,
// exports its C table, and on a machine without CANN fails to load naming CANN's libraries.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/backend/backend_library.h"
#include "test_support.h"

namespace crosstrain::core {
namespace {

TEST(NpuPlugin, LinksTorchNpuAndExportsItsTable) {
  auto info = read_elf_dynamic(NPU_PLUGIN);
  EXPECT_NE(std::find(info.needed.begin(), info.needed.end(), "libtorch_npu.so"), info.needed.end());
  auto nm = testing::run_command(std::string("nm -D --defined-only ") + NPU_PLUGIN);
  ASSERT_EQ(nm.exit_code, 0) << nm.output;
  EXPECT_NE(nm.output.find(" T crosstrain_npu_api"), std::string::npos) << nm.output;
}

TEST(NpuPlugin, WithoutCannItsLoadFailureNamesCann) {
  auto d = diagnose_library(NPU_PLUGIN, LibrarySearch::from_environment());
  std::set<std::string> cann;
  for (const auto& m : d.missing)
    if (m.family == LibraryFamily::Cann) cann.insert(m.name);
  EXPECT_EQ(cann, (std::set<std::string>{"libascendcl.so", "libhccl.so", "libge_runner.so", "libgraph.so",
                                         "libacl_op_compiler.so", "libacl_tdt_channel.so"}));
  try {
    load_backend_library(NPU_PLUGIN);
    GTEST_SKIP() << "loaded: this machine has CANN";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("source its set_env.sh"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace crosstrain::core
