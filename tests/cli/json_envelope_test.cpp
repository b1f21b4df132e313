// Every command that writes a JSON report (--json) wraps it in the same envelope: schema_version,
// kind (the command's name), crosstrain_version and argv (the command line as given), whether the
// command runs in the front or in the engine.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace fs = std::filesystem;
using crosstrain::testing::binary;
using crosstrain::testing::run_command;

namespace {

const std::string kTrace = crosstrain::testing::source_dir() + "/tests/data/traces/torch_cpu_small.json";
const std::string kTiny = "--device cpu --model resnet18 --small-stem --num-classes 10 --image-size 16 --batch-size 2 --threads 1";

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The commands listed by `crosstrain --help` whose own --help offers --json.
std::set<std::string> reporting_commands() {
  const auto top = run_command(binary() + " --help", false);
  EXPECT_EQ(top.exit_code, 0);
  std::set<std::string> out;
  std::istringstream in(top.output.substr(top.output.find("Subcommands:")));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && !line.empty()) {
    const std::string name = words(line).front();
    if (run_command(binary() + " " + name + " --help", false).output.find("--json") != std::string::npos)
      out.insert(name);
  }
  return out;
}

struct Case {
  std::string args;     // after the command name, before --json
  bool needs_engine;    // runs only where the build has libtorch
  int exit_code = 0;
};

class JsonEnvelope : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = crosstrain::testing::scratch_dir("json_envelope");
    std::ofstream(dir_ / "a.jsonl") << "{\"step\": 0, \"loss\": 2.0}\n{\"step\": 1, \"loss\": 1.5}\n";
    std::ofstream(dir_ / "b.jsonl") << "{\"step\": 0, \"loss\": 2.0}\n{\"step\": 1, \"loss\": 1.5}\n";
    std::ofstream(dir_ / "script.py") << "import torch\nx = torch.zeros(2).cuda()\n";
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // One run per reporting command; the key is the command's name.
  std::map<std::string, Case> cases() const {
    return {
        {"analyze", {kTrace, false}},
        {"compare", {path("a.jsonl") + " " + path("b.jsonl"), false}},
        {"migrate", {path("script.py") + " --out " + path("migrated"), false}},
        {"data-bench", {"--data synthetic:32 --workers 1 --images 16 --batch-size 8", false}},
        {"make-imagefolder", {"--out " + path("tree") + " --train 4 --val 2 --classes 2 --size 16x16 --threads 1", false}},
        {"models", {"", true}},
        {"doctor", {"--python ''", true}},
        {"op-check", {"--op relu", true}},
        {"comm-bench", {"--ops all-reduce --max-bytes 64 --iters 1 --warmup 0 --memcpy-bytes 1M", true}},
        {"train", {kTiny + " --steps 2 --warmup-steps 1", true}},
        {"bench", {kTiny + " --steps 2 --warmup-steps 1 --precisions fp32", true}},
        {"align", {kTiny + " --steps 1 --a device=cpu --b device=cpu --out " + path("align"), true}},
    };
  }

  void expect_envelope(const std::string& command, const std::string& args, int exit_code) {
    const std::string json = path(command + ".json");
    std::vector<std::string> argv = {binary(), command};
    for (const auto& w : words(args)) argv.push_back(w == "''" ? "" : w);
    argv.push_back("--json");
    argv.push_back(json);
    const auto r = run_command(binary() + " " + command + " " + args + " --json " + json);
    ASSERT_EQ(r.exit_code, exit_code) << command << "\n" << r.output;
    std::ifstream in(json);
    ASSERT_TRUE(in) << command << ": no JSON written";
    const auto doc = nlohmann::json::parse(in);
    EXPECT_EQ(doc.value("schema_version", -1), 1) << command;
    EXPECT_EQ(doc.value("kind", ""), command);
    EXPECT_EQ(doc.value("crosstrain_version", ""), CROSSTRAIN_VERSION) << command;
    ASSERT_TRUE(doc.contains("argv") && doc["argv"].is_array()) << command;
    EXPECT_EQ(doc["argv"].get<std::vector<std::string>>(), argv) << command;
    EXPECT_FALSE(doc.contains("command")) << command << ": the envelope's kind replaces 'command'";
  }

  fs::path dir_;
};

}  // namespace

TEST_F(JsonEnvelope, EveryReportingCommandIsCovered) {
  std::set<std::string> covered;
  for (const auto& [name, c] : cases()) covered.insert(name);
  EXPECT_EQ(reporting_commands(), covered);
}

TEST_F(JsonEnvelope, EveryCommandWritesIt) {
  for (const auto& [name, c] : cases()) {
#ifndef CROSSTRAIN_CLI_WITH_TORCH
    if (c.needs_engine) continue;
#endif
    SCOPED_TRACE(name);
    expect_envelope(name, c.args, c.exit_code);
  }
}

TEST_F(JsonEnvelope, AnalyzeDiffToo) {
  expect_envelope("analyze", "--diff " + kTrace + " " + kTrace, 0);
}
