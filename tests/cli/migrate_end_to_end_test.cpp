// End to end: a CUDA-only training script (model, optimizer, autocast, GradScaler, .cuda(), a
// checkpoint reloaded with map_location) is migrated to device-agnostic by the binary and then
// trained for a few steps on the CPU with the .venv torch.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run(const std::string& cmd, std::string& out) {
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(MigrateEndToEnd, CudaTrainingScriptRunsOnCpuAfterMigration) {
  fs::path dir = fs::temp_directory_path() / ("crosstrain_migrate_e2e_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "project");
  fs::copy_file(fs::path(CROSSTRAIN_MIGRATE_FIXTURES) / "cuda_train.py", dir / "project" / "cuda_train.py");

  std::string out;
  int code = run("'" CROSSTRAIN_BINARY "' migrate '" + (dir / "project").string() + "' --to device-agnostic --out '" +
                     (dir / "migrated").string() + "' --report '" + (dir / "report").string() + "' 2>&1",
                 out);
  ASSERT_EQ(code, 0) << out;
  std::string migrated = slurp(dir / "migrated" / "cuda_train.py");
  std::string original = slurp(dir / "project" / "cuda_train.py");
  // The docstring (which talks about .cuda() and "cuda") is not code: byte-identical.
  std::string docstring = original.substr(0, original.find("\"\"\"\n", 3) + 4);
  ASSERT_EQ(migrated.substr(0, docstring.size()), docstring);
  std::string body = migrated.substr(docstring.size());
  EXPECT_EQ(body.find(".cuda("), std::string::npos) << migrated;
  // torch.cuda.manual_seed_all stays: valid without CUDA, and torch.manual_seed would reseed the CPU.
  std::string rest = body;
  for (size_t at; (at = rest.find("torch.cuda.manual_seed_all(")) != std::string::npos;) rest.erase(at, 27);
  EXPECT_EQ(rest.find("torch.cuda"), std::string::npos) << migrated;
  EXPECT_EQ(body.find("\"cuda"), std::string::npos) << migrated;
  EXPECT_NE(migrated.find("torch.backends.cudnn.benchmark = True  # a CUDA-only knob"), std::string::npos);
  EXPECT_NE(slurp(dir / "report" / "unsupported.csv").find("torch.backends.cudnn.benchmark"), std::string::npos);

  // Hide any GPU so the migrated script must take its CPU fallback.
  std::string py_out;
  code = run("CUDA_VISIBLE_DEVICES= '" CROSSTRAIN_PYTHON "' '" + (dir / "migrated" / "cuda_train.py").string() + "' '" +
                 dir.string() + "' 2>&1",
             py_out);
  ASSERT_EQ(code, 0) << py_out << "\n--- migrated script ---\n" << migrated;
  auto result = nlohmann::json::parse(py_out.substr(py_out.rfind('{')));
  EXPECT_EQ(result["device"], "cpu");
  EXPECT_EQ(result["step"], 6);
  EXPECT_TRUE(result["restored_matches"].get<bool>());
  auto losses = result["losses"].get<std::vector<double>>();
  ASSERT_EQ(losses.size(), 6u);
  for (double l : losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_LT(losses.back(), losses.front());

  // Idempotent: migrating the migrated tree converts nothing more.
  std::string again;
  code = run("'" CROSSTRAIN_BINARY "' migrate '" + (dir / "migrated").string() + "' --check --json - 2>/dev/null", again);
  EXPECT_EQ(code, 0);  // only the cudnn setting is left: reported, harmless, not failing the gate
  auto doc = nlohmann::json::parse(again);
  EXPECT_EQ(doc["totals"]["references_converted"], 0);
  EXPECT_EQ(doc["totals"]["references_left"], 1);
  EXPECT_EQ(doc["totals"]["references_left_harmless"], 1);
  fs::remove_all(dir);
}

TEST(MigrateEndToEnd, CpuTargetRunsAndNpuTargetMatchesItsGolden) {
  fs::path dir = fs::temp_directory_path() / ("crosstrain_migrate_e2e_targets_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string fixture = std::string(CROSSTRAIN_MIGRATE_FIXTURES) + "/cuda_train.py";
  std::string out;
  ASSERT_EQ(run("'" CROSSTRAIN_BINARY "' migrate '" + fixture + "' --to cpu --out '" + (dir / "cpu").string() + "' 2>&1", out), 0)
      << out;
  std::string py_out;
  int code = run("CUDA_VISIBLE_DEVICES= '" CROSSTRAIN_PYTHON "' '" + (dir / "cpu" / "cuda_train.py").string() + "' '" +
                     dir.string() + "' 2>&1",
                 py_out);
  ASSERT_EQ(code, 0) << py_out;
  auto result = nlohmann::json::parse(py_out.substr(py_out.rfind('{')));
  EXPECT_EQ(result["device"], "cpu");
  EXPECT_TRUE(result["restored_matches"].get<bool>());

  // No Ascend hardware here: the npu output is compared with a reviewed golden file instead.
  ASSERT_EQ(run("'" CROSSTRAIN_BINARY "' migrate '" + fixture + "' --to npu --out '" + (dir / "npu").string() + "' 2>&1", out), 0)
      << out;
  EXPECT_EQ(slurp(dir / "npu" / "cuda_train.py"), slurp(std::string(CROSSTRAIN_MIGRATE_FIXTURES) + "/cuda_train.npu.py"));
  fs::remove_all(dir);
}

}  // namespace
