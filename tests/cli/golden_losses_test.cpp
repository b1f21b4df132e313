// Fixed-seed CPU runs must keep their per-step losses bit for bit across changes to the trainer: the
// golden losses in tests/data/golden/train_losses.json were recorded by an earlier build
// (tests/data/golden/record_losses.py). oneDNN chooses kernels, and so rounding, by instruction set:
// on a CPU whose ISA differs from the recording machine's, the check falls back to a relative
// tolerance and says so.
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "test_support.h"

namespace ct = crosstrain::testing;

namespace {

std::set<std::string> cpu_isa() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> have, out;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::string w;
      while (words >> w) have.insert(w);
      break;
    }
  for (const char* w : {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "avx512_vnni"})
    if (have.count(w)) out.insert(w);
  return out;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace

TEST(GoldenLosses, FixedSeedRunsKeepTheirLossesBitForBit) {
  std::ifstream in(ct::source_dir() + "/tests/data/golden/train_losses.json");
  ASSERT_TRUE(in) << "golden file missing";
  const auto golden = nlohmann::json::parse(in);
  std::set<std::string> recorded_isa;
  for (const auto& w : golden.at("cpu_isa")) recorded_isa.insert(w.get<std::string>());
  const bool same_isa = recorded_isa == cpu_isa();
  if (!same_isa) std::cout << "[golden] this CPU's ISA differs from the recording's: comparing within 1e-4 relative\n";
  const auto dir = ct::scratch_dir("golden_losses");
  for (const auto& [name, c] : golden.at("cases").items()) {
    if (c.at("flags").dump().find("fashion-mnist") != std::string::npos &&
        !std::ifstream("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
      std::cout << "[golden] " << name << " skipped: Fashion-MNIST is not installed\n";
      continue;
    }
    std::string cmd = ct::binary() + " train";
    for (const auto& f : c.at("flags")) cmd += " " + quoted(f.get<std::string>());
    const auto log = (dir / (name + ".jsonl")).string();
    cmd += " --log " + quoted(log);
    const auto r = ct::run_command(cmd + " > /dev/null");
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.output;
    std::ifstream lines(log);
    std::vector<double> got;
    for (std::string l; std::getline(lines, l);)
      if (!l.empty()) got.push_back(nlohmann::json::parse(l).at("loss").get<double>());
    const auto want = c.at("losses").get<std::vector<double>>();
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t i = 0; i < want.size(); ++i) {
      if (same_isa)
        EXPECT_EQ(got[i], want[i]) << name << " step " << i;
      else
        EXPECT_NEAR(got[i], want[i], 1e-4 * std::abs(want[i])) << name << " step " << i;
    }
  }
  std::filesystem::remove_all(dir);
}
