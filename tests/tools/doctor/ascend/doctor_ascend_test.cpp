// doctor's Ascend checks on CANN trees, driver files, tools and environments the tests build, and
// on the unpacked torch_npu wheel.
#include "tools/doctor/ascend/doctor_ascend.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "test_support.h"

namespace crosstrain::doctor::ascend {
namespace {

namespace fs = std::filesystem;

const DoctorCheck* find(const std::vector<DoctorCheck>& checks, const std::string& name) {
  for (const auto& c : checks)
    if (c.name == name) return &c;
  return nullptr;
}

std::string dump(const std::vector<DoctorCheck>& checks) {
  std::string s;
  for (const auto& c : checks) s += c.name + " | " + c.value + " | " + c.hint + "\n";
  return s;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

void write_script(const fs::path& p, const std::string& body) {
  write(p, "#!/bin/sh\n" + body);
  chmod(p.c_str(), 0755);
}

// A machine without Python, its root a scratch directory, PATH without npu-smi.
AscendEnvironment bare(const fs::path& root) {
  AscendEnvironment e;
  e.root = root.string();
  e.env["PATH"] = "/usr/bin:/bin";
  e.net_class_dir = (root / "sys/class/net").string();
  for (const auto* nic : {"eth0", "lo", "enp3s0"}) fs::create_directories(root / "sys/class/net" / nic);
  return e;
}

// A CANN install at the default path, its lib64 holding the fake CANN libraries.
fs::path install_fake_toolkit(const fs::path& root, const std::string& version) {
  const fs::path toolkit = root / "usr/local/Ascend/ascend-toolkit/latest";
  fs::create_directories(toolkit / "lib64");
  for (const auto& lib : fs::directory_iterator(FAKE_CANN_LIB64)) fs::copy(lib.path(), toolkit / "lib64" / lib.path().filename());
  write(toolkit / "x86_64-linux/ascend_toolkit_install.info", "package_name=Ascend-cann-toolkit\nversion=" + version + "\n");
  // A part's own file, older, which must not be taken for the toolkit's version.
  write(toolkit / "aaa_runtime/ascend_runtime_install.info", "version=7.0.0\n");
  fs::create_directories(toolkit / "opp/built-in");
  write(root / "usr/local/Ascend/ascend-toolkit/set_env.sh", "export ASCEND_TOOLKIT_HOME=...\n");
  return toolkit;
}

void source_set_env(AscendEnvironment& e, const fs::path& toolkit) {
  e.env["ASCEND_TOOLKIT_HOME"] = toolkit.string();
  e.env["ASCEND_HOME_PATH"] = toolkit.string();
  e.env["ASCEND_OPP_PATH"] = (toolkit / "opp").string();
  e.env["LD_LIBRARY_PATH"] = (toolkit / "lib64").string();
}

TEST(AscendDoctor, NothingInstalled) {
  auto root = testing::scratch_dir("ascend_none");
  auto e = bare(root);
  EXPECT_FALSE(ascend_detected(e));
  e.required = true;
  auto checks = run_ascend_checks(e);
  auto* toolkit = find(checks, "CANN toolkit");
  ASSERT_TRUE(toolkit) << dump(checks);
  EXPECT_EQ(toolkit->status, CheckStatus::Missing);
  EXPECT_TRUE(toolkit->required);
  EXPECT_NE(toolkit->hint.find("set_env.sh"), std::string::npos);
  EXPECT_EQ(find(checks, "NPU driver")->status, CheckStatus::Missing);
  EXPECT_EQ(find(checks, "npu-smi info")->value, "npu-smi not on PATH");
  EXPECT_EQ(find(checks, "ASCEND_OPP_PATH")->status, CheckStatus::Missing);
  for (const auto& c : checks)
    if (c.status == CheckStatus::Missing || c.status == CheckStatus::Warn) EXPECT_FALSE(c.hint.empty()) << c.name;
}

TEST(AscendDoctor, ToolkitInstalledButSetEnvNotSourced) {
  auto root = testing::scratch_dir("ascend_unsourced");
  auto toolkit = install_fake_toolkit(root, "8.1.RC1");
  auto e = bare(root);
  EXPECT_TRUE(ascend_detected(e));
  auto checks = run_ascend_checks(e);
  auto* tk = find(checks, "CANN toolkit");
  EXPECT_EQ(tk->status, CheckStatus::Ok) << dump(checks);
  EXPECT_NE(tk->value.find("version 8.1.RC1"), std::string::npos) << tk->value;
  EXPECT_NE(tk->value.find("default path"), std::string::npos) << tk->value;
  auto* sourced = find(checks, "CANN set_env.sh sourced");
  EXPECT_EQ(sourced->status, CheckStatus::Missing);
  EXPECT_NE(sourced->value.find("ASCEND_TOOLKIT_HOME"), std::string::npos);
  EXPECT_NE(sourced->hint.find("source " + (root / "usr/local/Ascend/ascend-toolkit/set_env.sh").string()), std::string::npos)
      << sourced->hint;

  source_set_env(e, toolkit);
  checks = run_ascend_checks(e);
  EXPECT_EQ(find(checks, "CANN set_env.sh sourced")->status, CheckStatus::Ok) << dump(checks);
  EXPECT_NE(find(checks, "CANN toolkit")->value.find("(ASCEND_TOOLKIT_HOME)"), std::string::npos);
  EXPECT_EQ(find(checks, "ASCEND_OPP_PATH")->status, CheckStatus::Ok);
  EXPECT_EQ(find(checks, "LD_LIBRARY_PATH")->status, CheckStatus::Ok) << dump(checks);
}

TEST(AscendDoctor, BrokenToolkits) {
  auto root = testing::scratch_dir("ascend_broken");
  auto e = bare(root);
  e.env["ASCEND_TOOLKIT_HOME"] = "/nonexistent/ascend-toolkit/latest";
  auto checks = run_ascend_checks(e);
  EXPECT_NE(find(checks, "CANN toolkit")->value.find("does not exist"), std::string::npos) << dump(checks);
  // A toolkit without its runtime library; an operator path without operators.
  auto toolkit = install_fake_toolkit(root, "8.0.0");
  fs::remove(toolkit / "lib64/libascendcl.so");
  fs::remove_all(toolkit / "opp/built-in");
  source_set_env(e, toolkit);
  checks = run_ascend_checks(e);
  EXPECT_EQ(find(checks, "CANN toolkit")->status, CheckStatus::Missing) << dump(checks);
  EXPECT_EQ(find(checks, "ASCEND_OPP_PATH")->status, CheckStatus::Warn);
}

TEST(AscendDoctor, DriverFirmwareAndNpuSmi) {
  auto root = testing::scratch_dir("ascend_driver");
  auto e = bare(root);
  write(root / "usr/local/Ascend/driver/version.info", "Version=24.1.rc3\nascendhal_version=7.35.23\n");
  fs::create_directories(root / "usr/local/Ascend/driver/lib64/driver");
  write(root / "usr/local/Ascend/firmware/version.info", "Version=7.5.0.3.220\n");
  const fs::path bin = root / "bin";
  write_script(bin / "npu-smi", "echo '| npu-smi 24.1.rc3                 Version: 24.1.rc3                |'\n");
  e.env["PATH"] = bin.string() + ":/usr/bin:/bin";
  auto checks = run_ascend_checks(e);
  EXPECT_NE(find(checks, "NPU driver")->value.find("version 24.1.rc3"), std::string::npos) << dump(checks);
  EXPECT_EQ(find(checks, "NPU firmware")->value, "7.5.0.3.220");
  EXPECT_EQ(find(checks, "npu-smi info")->status, CheckStatus::Ok);
  EXPECT_NE(find(checks, "npu-smi info")->value.find("24.1.rc3"), std::string::npos);
  // The driver's libraries must be on LD_LIBRARY_PATH.
  EXPECT_EQ(find(checks, "LD_LIBRARY_PATH")->status, CheckStatus::Warn);
  EXPECT_NE(find(checks, "LD_LIBRARY_PATH")->hint.find("lib64/driver"), std::string::npos);

  write_script(bin / "npu-smi", "echo 'dcmi module initialize failed. ret is -8005'\nexit 1\n");
  checks = run_ascend_checks(e);
  EXPECT_EQ(find(checks, "npu-smi info")->status, CheckStatus::Warn) << dump(checks);
  EXPECT_NE(find(checks, "npu-smi info")->value.find("dcmi module initialize failed"), std::string::npos);
}

TEST(AscendDoctor, EnvironmentVariables) {
  auto root = testing::scratch_dir("ascend_vars");
  auto e = bare(root);
  auto status = [&](const std::string& var, const std::string& value) {
    e.env[var] = value;
    auto checks = run_ascend_checks(e);
    return find(checks, var)->status;
  };
  EXPECT_EQ(status("ASCEND_RT_VISIBLE_DEVICES", "0,1,6"), CheckStatus::Ok);
  EXPECT_EQ(status("ASCEND_RT_VISIBLE_DEVICES", "0,0"), CheckStatus::Warn);
  EXPECT_EQ(status("ASCEND_RT_VISIBLE_DEVICES", "npu0"), CheckStatus::Warn);
  EXPECT_EQ(status("HCCL_SOCKET_IFNAME", "eth"), CheckStatus::Ok);      // a prefix of eth0
  EXPECT_EQ(status("HCCL_SOCKET_IFNAME", "=eth"), CheckStatus::Warn);   // exact: no interface "eth"
  EXPECT_EQ(status("HCCL_SOCKET_IFNAME", "=enp3s0,eth0"), CheckStatus::Ok);
  EXPECT_EQ(status("HCCL_SOCKET_IFNAME", "ib0"), CheckStatus::Warn);
  EXPECT_NE(find(run_ascend_checks(e), "HCCL_SOCKET_IFNAME")->hint.find("eth0"), std::string::npos);
  e.env["LD_LIBRARY_PATH"] = "/nonexistent/Ascend/lib64:" + root.string();
  auto checks = run_ascend_checks(e);
  EXPECT_EQ(find(checks, "LD_LIBRARY_PATH")->status, CheckStatus::Warn);
  EXPECT_NE(find(checks, "LD_LIBRARY_PATH")->value.find("/nonexistent/Ascend/lib64"), std::string::npos);
}

TEST(AscendDoctor, VersionPairingRules) {
  EXPECT_EQ(release_of("2.11.0.post3"), "2.11.0");
  EXPECT_EQ(release_of("2.11.0+cu130"), "2.11.0");
  EXPECT_EQ(release_of("2.9.1"), "2.9.1");
  EXPECT_EQ(release_of("2.1"), "2.1.0");
  EXPECT_EQ(required_torch("Name: torch_npu\nRequires-Dist: torch ==2.11.0+cpu\nRequires-Dist: numpy\n"), "2.11.0+cpu");
  EXPECT_EQ(required_torch("Requires-Dist: torchvision ==0.26.0\n"), std::nullopt);
}

// The unpacked torch_npu wheel: its version, its pairing, and its library's CANN dependencies.
std::string wheel_dir() { return TORCH_NPU_DIR; }
#define SKIP_WITHOUT_TORCH_NPU() \
  if (wheel_dir().empty()) GTEST_SKIP() << "the torch_npu reference wheel is not unpacked (scripts/setup.sh)"

TEST(AscendDoctorTorchNpu, RealWheelPairingAndMissingCann) {
  SKIP_WITHOUT_TORCH_NPU();
  auto root = testing::scratch_dir("ascend_wheel");
  auto e = bare(root);
  e.torch_npu_dir = wheel_dir() + "/torch_npu";
  e.libtorch_version = "2.11.0";
  auto checks = run_ascend_checks(e);
  EXPECT_NE(find(checks, "torch_npu")->value.find("2.11.0.post3"), std::string::npos) << dump(checks);
  EXPECT_EQ(find(checks, "libtorch (crosstrain) / torch_npu")->status, CheckStatus::Ok) << dump(checks);
  auto* lib = find(checks, "torch_npu library");
  ASSERT_TRUE(lib);
  EXPECT_EQ(lib->status, CheckStatus::Missing);
  for (const auto* name : {"libascendcl.so", "libhccl.so", "libge_runner.so", "libgraph.so", "libacl_op_compiler.so",
                           "libacl_tdt_channel.so"})
    EXPECT_NE(lib->value.find(name), std::string::npos) << name << ": " << lib->value;
  EXPECT_EQ(lib->value.find("libtorch"), std::string::npos) << "torch's libraries are Python's business: " << lib->value;
  EXPECT_NE(lib->hint.find("source its set_env.sh"), std::string::npos);

  e.libtorch_version = "2.10.0";
  checks = run_ascend_checks(e);
  auto* pair = find(checks, "libtorch (crosstrain) / torch_npu");
  EXPECT_EQ(pair->status, CheckStatus::Missing);
  EXPECT_NE(pair->hint.find("torch==2.11.0"), std::string::npos) << pair->hint;
  EXPECT_NE(pair->hint.find("torch-npu==2.10.0"), std::string::npos) << pair->hint;

  // A (fake) CANN sourced: every library torch_npu needs is found.
  auto toolkit = install_fake_toolkit(root, "8.5.0");
  source_set_env(e, toolkit);
  checks = run_ascend_checks(e);
  EXPECT_EQ(find(checks, "torch_npu library")->status, CheckStatus::Ok) << dump(checks);
}

TEST(AscendDoctorTorchNpu, PythonWithTheWheelOnItsPath) {
  SKIP_WITHOUT_TORCH_NPU();
  auto root = testing::scratch_dir("ascend_python");
  auto e = bare(root);
  e.python = testing::python();
  e.env["PATH"] = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  e.env["PYTHONPATH"] = wheel_dir();
  auto checks = run_ascend_checks(e);
  auto* npu = find(checks, "torch_npu");
  if (!find(checks, "torch (Python) / torch_npu")) GTEST_SKIP() << "no torch for " << e.python << ":\n" << dump(checks);
  EXPECT_NE(npu->value.find(wheel_dir()), std::string::npos) << dump(checks);
  // torch_npu 2.11 requires torch==2.11.0+cpu: the CUDA wheel pairs by release but is flagged.
  auto* pair = find(checks, "torch (Python) / torch_npu");
  EXPECT_NE(pair->status, CheckStatus::Missing) << pair->value;
  if (pair->value.find("+cu") != std::string::npos) {
    EXPECT_EQ(pair->status, CheckStatus::Warn) << pair->value;
    EXPECT_NE(pair->hint.find("torch==2.11.0+cpu"), std::string::npos) << pair->hint;
  }
  // Its entry point makes `import torch` load it, which fails without CANN.
  auto* imp = find(checks, "import torch");
  ASSERT_TRUE(imp) << dump(checks);
  EXPECT_EQ(imp->status, CheckStatus::Missing) << imp->value;
  EXPECT_NE(imp->value.find("torch_npu"), std::string::npos) << imp->value;
  EXPECT_NE(imp->hint.find("TORCH_DEVICE_BACKEND_AUTOLOAD=0"), std::string::npos);
  auto* tbe = find(checks, "TBE Python packages");
  ASSERT_TRUE(tbe);
  if (tbe->status != CheckStatus::Ok) EXPECT_NE(tbe->hint.find("-m pip install"), std::string::npos);

  e.env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0";
  checks = run_ascend_checks(e);
  EXPECT_EQ(find(checks, "import torch")->status, CheckStatus::Info) << dump(checks);
}

}  // namespace
}  // namespace crosstrain::doctor::ascend
