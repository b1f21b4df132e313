// Why a backend library does not load: the ELF reader, the ld.so-like resolution and the one-line
// message, on libraries built here (a fake CANN) and on torch_npu's real libtorch_npu.so.
#include "core/backend/backend_library.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "test_support.h"

namespace crosstrain::core {
namespace {

std::set<std::string> names(const std::vector<MissingLibrary>& libs, LibraryFamily family) {
  std::set<std::string> out;
  for (const auto& m : libs)
    if (m.family == family) out.insert(m.name);
  return out;
}

LibrarySearch empty_search() { return LibrarySearch{}; }

std::string torch_npu_lib() {
  const std::string dir = TORCH_NPU_DIR;
  return dir.empty() ? "" : dir + "/torch_npu/lib/libtorch_npu.so";
}

#define SKIP_WITHOUT_TORCH_NPU()                                                                      \
  if (torch_npu_lib().empty())                                                                        \
  GTEST_SKIP() << "the torch_npu reference wheel is not unpacked (scripts/setup.sh fetches it into " \
                  "third_party/torch_npu/)"

const std::set<std::string> kCannNeeded = {"libascendcl.so", "libhccl.so", "libge_runner.so", "libgraph.so",
                                           "libacl_op_compiler.so", "libacl_tdt_channel.so"};

TEST(ElfDynamic, ReadsNeededAndSonameOfABuiltLibrary) {
  auto info = read_elf_dynamic(NEEDS_CANN_LIB);
  EXPECT_EQ(info.soname, "libneeds_cann.so");
  EXPECT_NE(std::find(info.needed.begin(), info.needed.end(), "libascendcl.so"), info.needed.end());
  EXPECT_NE(std::find(info.needed.begin(), info.needed.end(), "libhccl.so"), info.needed.end());
  EXPECT_TRUE(info.rpath.empty());
  EXPECT_TRUE(info.runpath.empty());
}

TEST(ElfDynamic, RejectsWhatIsNotAnElfLibraryOfThisMachine) {
  auto dir = testing::scratch_dir("elf_reject");
  std::ofstream(dir / "text.so") << "not a library\n";
  EXPECT_THROW(
      {
        try {
          read_elf_dynamic((dir / "text.so").string());
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("not an ELF"), std::string::npos) << e.what();
          throw;
        }
      },
      std::runtime_error);
  // The same library with e_machine patched to another architecture: a wheel for the wrong machine.
  std::ifstream in(NEEDS_CANN_LIB, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const uint16_t other = bytes[18] == 62 ? 183 : 62;  // EM_X86_64 <-> EM_AARCH64
  bytes[18] = static_cast<char>(other & 0xff);
  bytes[19] = static_cast<char>(other >> 8);
  std::ofstream(dir / "foreign.so", std::ios::binary) << bytes;
  try {
    read_elf_dynamic((dir / "foreign.so").string());
    FAIL() << "a foreign-architecture library was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(other == 183 ? "built for aarch64" : "built for x86_64"), std::string::npos)
        << e.what();
  }
}

TEST(LibraryResolution, NamesEveryMissingCannLibraryAndFindsThemOnTheSearchPath) {
  auto d = diagnose_library(NEEDS_CANN_LIB, empty_search());
  EXPECT_TRUE(d.file_problem.empty());
  EXPECT_EQ(names(d.missing, LibraryFamily::Cann), (std::set<std::string>{"libascendcl.so", "libhccl.so"}));
  for (const auto& m : d.missing) EXPECT_EQ(m.needed_by, "libneeds_cann.so");
  // glibc's own libraries are found in the system directories of this machine.
  EXPECT_TRUE(names(d.missing, LibraryFamily::Other).count("libc.so.6"));
  auto search = LibrarySearch::from_environment();
  EXPECT_TRUE(names(diagnose_library(NEEDS_CANN_LIB, search).missing, LibraryFamily::Other).empty());
  search.ld_library_path = {FAKE_CANN_LIB64};
  EXPECT_TRUE(diagnose_library(NEEDS_CANN_LIB, search).missing.empty());
}

TEST(LibraryResolution, ClassifiesByProvider) {
  EXPECT_EQ(classify_library("libascendcl.so"), LibraryFamily::Cann);
  EXPECT_EQ(classify_library("libacl_tdt_channel.so"), LibraryFamily::Cann);
  EXPECT_EQ(classify_library("libascend_hal.so"), LibraryFamily::AscendDriver);
  EXPECT_EQ(classify_library("libtorch_python.so"), LibraryFamily::Torch);
  EXPECT_EQ(classify_library("libc10.so"), LibraryFamily::Torch);
  EXPECT_EQ(classify_library("libgomp.so.1"), LibraryFamily::Other);
}

TEST(LoadFailure, OneLineNamingTheMissingLibrariesAndTheRemedy) {
  try {
    load_backend_library(NEEDS_CANN_LIB);
    FAIL() << "loaded without its CANN libraries";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_NE(msg.find("libascendcl.so"), std::string::npos) << msg;
    EXPECT_NE(msg.find("libhccl.so"), std::string::npos) << msg;
    EXPECT_NE(msg.find("source its set_env.sh"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("cannot open shared object file"), std::string::npos) << "raw dlerror: " << msg;
  }
}

TEST(LoadFailure, TheFileItself) {
  auto msg = explain_load_failure("/nonexistent/libtorch_npu.so", "whatever", empty_search());
  EXPECT_NE(msg.find("/nonexistent/libtorch_npu.so"), std::string::npos);
  EXPECT_NE(msg.find("no such file"), std::string::npos) << msg;
}

TEST(LoadFailure, UndefinedSymbolsAreExplainedByTheirOwner) {
  // Every dependency found, and still no load: the loader's undefined symbol, with the remedy.
  auto search = LibrarySearch::from_environment();
  search.ld_library_path = {FAKE_CANN_LIB64};
  auto python = explain_load_failure(NEEDS_CANN_LIB, "/x/libtorch_python.so: undefined symbol: PyInstanceMethod_Type", search);
  EXPECT_NE(python.find("PyInstanceMethod_Type"), std::string::npos) << python;
  EXPECT_NE(python.find("LD_PRELOAD"), std::string::npos) << python;
  auto acl = explain_load_failure(NEEDS_CANN_LIB, "/x/libtorch_npu.so: undefined symbol: aclrtSynchronizeDeviceWithTimeout", search);
  EXPECT_NE(acl.find("older than this torch_npu expects"), std::string::npos) << acl;
}

TEST(TorchNpu, TheRealLibraryNeedsSixCannLibraries) {
  SKIP_WITHOUT_TORCH_NPU();
  auto d = diagnose_library(torch_npu_lib(), LibrarySearch::from_environment());
  ASSERT_TRUE(d.file_problem.empty()) << d.file_problem;
  // Five named by libtorch_npu.so, libacl_tdt_channel.so by its libtensorpipe.so, found through
  // its $ORIGIN RPATH like libnpu_profiler.so (neither of which is reported missing).
  EXPECT_EQ(names(d.missing, LibraryFamily::Cann), kCannNeeded);
  for (const auto& m : d.missing) {
    EXPECT_NE(m.name, "libtensorpipe.so");
    EXPECT_NE(m.name, "libnpu_profiler.so");
    if (m.name == "libacl_tdt_channel.so") EXPECT_EQ(m.needed_by, "libtensorpipe.so");
  }
  EXPECT_TRUE(names(d.missing, LibraryFamily::Torch).count("libtorch_python.so"));
  EXPECT_TRUE(names(d.missing, LibraryFamily::Other).empty());
}

TEST(TorchNpu, FakeCannAndTorchOnTheSearchPathResolveEverything) {
  SKIP_WITHOUT_TORCH_NPU();
  if (std::string(TORCH_LIB_DIR).empty()) GTEST_SKIP() << "torch is not installed for " << CROSSTRAIN_PYTHON;
  auto search = LibrarySearch::from_environment();
  search.ld_library_path = {FAKE_CANN_LIB64, TORCH_LIB_DIR};
  auto d = diagnose_library(torch_npu_lib(), search);
  std::string left;
  for (const auto& m : d.missing) left += m.name + " (by " + m.needed_by + ") ";
  EXPECT_TRUE(d.missing.empty()) << left;
}

TEST(TorchNpu, LoadingTheRealLibraryGivesOneMessage) {
  SKIP_WITHOUT_TORCH_NPU();
  try {
    load_backend_library(torch_npu_lib());
    GTEST_SKIP() << "libtorch_npu.so loaded: this machine has CANN";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const auto& lib : kCannNeeded) EXPECT_NE(msg.find(lib), std::string::npos) << lib << " not named: " << msg;
    EXPECT_NE(msg.find("install Ascend's CANN toolkit and source its set_env.sh"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("cannot open shared object file"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace crosstrain::core
