// `crosstrain run`'s options against the agent's: one table (python/crosstrain/options.json), read
// by both, so every option has one name, one default and one verdict on each value. Each value below
// is tried as a flag of the real front (`run ... -- /usr/bin/env ...`, which prints the JSON the agent
// would get) and as a keyword of crosstrain.start() (tests/python/run_option_verdicts.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.h"

namespace fs = std::filesystem;
using crosstrain::testing::binary;
using crosstrain::testing::python;
using crosstrain::testing::read_bytes;
using crosstrain::testing::run_command;
using crosstrain::testing::scratch_dir;
using crosstrain::testing::source_dir;
using nlohmann::json;

namespace {

struct Sample {
  json value;
  bool valid;
};

// Values for every option of the table, each with the verdict both sides must give.
const std::map<std::string, std::vector<Sample>>& samples() {
  static const std::map<std::string, std::vector<Sample>> s = {
      {"dump", {{"d", true}}},
      {"dump_steps", {{"0-4,10", true}, {"", true}, {"3", true}, {"3-1", false}, {"1,", false}, {"a", false},
                      {"-1", false}, {" 1", false}, {"1234567890123456", false}}},
      {"dump_level", {{"op", true}, {"both", true}, {"module", true}, {"layers", false}, {"", false}, {"OP", false}}},
      {"dump_mode", {{"tensors", true}, {"stats", true}, {"npy", false}}},
      {"dump_ranks", {{"0,1", true}, {"", true}, {"x", false}, {"1-0", false}}},
      // Python's syntax: named groups are Python's; the agent alone checks it.
      {"dump_filter", {{"(?i)forward", true}, {"(?P<n>fc)1", true}, {"(unclosed", false}, {"[a-", false}}},
      {"dump_max_bytes", {{20000, true}, {"10G", true}, {"512MiB", true}, {1, true}, {0, false}, {-1, false},
                          {"2X", false}, {"1.5G", false}, {"many", false}, {"2048P", false}}},
      {"dump_overwrite", {{true, true}}},
      {"dump_optimizer_ops", {{true, true}}},
      {"meta", {{{{"precision", "bf16"}}, true}, {{{"a", "b=c"}}, true}, {{{"a", ""}}, true}, {{{"", "x"}}, false}}},
      {"profile", {{"p", true}}},
      {"profile_wait", {{0, true}, {5, true}, {-1, false}, {1000000001, false}, {2.5, false}, {"x", false}}},
      {"profile_warmup", {{0, true}, {-1, false}, {"one", false}}},
      {"profile_active", {{1, true}, {7, true}, {0, false}, {-3, false}}},
      {"profile_repeat", {{0, true}, {2, true}, {-1, false}}},
      {"profile_memory", {{true, true}}},
      {"profile_shapes", {{true, true}}},
      {"profile_stack", {{false, true}, {true, true}}},
      {"profiler_level", {{"level0", true}, {"none", true}, {"level3", false}, {"", false}}},
      {"aic_metrics", {{"memory", true}, {"l2-cache", true}, {"", true}, {"Memory", false}, {"x", false}}},
      {"l2_cache", {{true, true}}},
      {"profile_overwrite", {{true, true}}},
      {"seed", {{0, true}, {42, true}, {9000000000000000, true}, {-1, false}, {9000000000000001, false},
                {"x", false}, {1.5, false}}},
      {"deterministic", {{true, true}}},
      {"step_marker", {{"train:train_step", true}, {"__main__:Trainer.step", true}, {"a.b:c", true},
                       {"nocolon", false}, {"mod:1f", false}, {"1mod:f", false}, {"mod:", false}, {":f", false},
                       {"mod:f g", false}, {"m\xc3\xb3" "d:f", false}}},
      {"stop_on_nonfinite", {{true, true}}},
      {"test_perturb", {{"op_forward/1/aten.relu=0.5", true}, {"a=b=1e-3", true}, {"x=.5", true}, {"noequals", false},
                        {"=1", false}, {"a=1x", false}, {"a=", false}}},
  };
  return s;
}

json table_options() { return json::parse(read_bytes(source_dir() + "/python/crosstrain/options.json"))["options"]; }

std::string flag_of(const json& spec) {
  std::string f = "--" + spec["name"].get<std::string>();
  for (auto& c : f)
    if (c == '_') c = '-';
  return f;
}

std::string quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The flag and words that give `value` on the command line (none for a switch left at its default).
std::vector<std::string> words_for(const json& spec, const json& value) {
  const std::string flag = flag_of(spec);
  if (value.is_boolean()) {
    if (value == spec["default"]) return {};
    return {value.get<bool>() ? flag : "--no-" + flag.substr(2)};
  }
  if (value.is_object()) {
    std::vector<std::string> out;
    for (const auto& [k, v] : value.items()) out.insert(out.end(), {flag, k + "=" + v.get<std::string>()});
    return out;
  }
  return {flag, value.is_string() ? value.get<std::string>() : value.dump()};
}

struct Case {
  std::string option, label;
  json spec, start = json::object();
  std::vector<std::string> words;
  bool valid = false;
  // What the front said.
  bool front_ok = false;
  std::string front_output, handoff;
};

std::vector<Case> make_cases() {
  std::vector<Case> cases;
  for (const auto& spec : table_options()) {
    const std::string name = spec["name"];
    const auto it = samples().find(name);
    if (it == samples().end()) continue;  // reported by the test
    const std::string needs = spec.value("needs", "");
    bool needs_case = !needs.empty();
    for (const auto& sample : it->second) {
      Case c;
      c.option = name;
      c.spec = spec;
      c.valid = sample.valid;
      c.start[name] = sample.value;
      c.words = words_for(spec, sample.value);
      c.label = name + "=" + sample.value.dump();
      if (!needs.empty()) {
        const std::string dir = needs.substr(0, 1) + std::to_string(cases.size());
        c.start[needs] = dir;
        c.words.insert(c.words.begin(), {"--" + needs, dir});
      }
      cases.push_back(c);
      // Set without what it needs: refused on both sides.
      if (needs_case && sample.valid && sample.value != spec["default"]) {
        Case lone = c;
        lone.start.erase(needs);
        lone.words.erase(lone.words.begin(), lone.words.begin() + 2);
        lone.valid = false;
        lone.label += " without " + needs;
        cases.push_back(lone);
        needs_case = false;
      }
    }
  }
  return cases;
}

// `crosstrain run WORDS -- /usr/bin/env -u NAME`: the front's verdict and, when it ran, the hand-off.
// The command's own flag (-u) must stay the command's whatever option comes before '--'.
void ask_front(Case& c, const fs::path& dir) {
  std::string cmd = "cd " + dir.string() + " && " + binary() + " run";
  for (const auto& w : c.words) cmd += " " + quoted(w);
  const auto r = run_command(cmd + " -- /usr/bin/env -u CROSSTRAIN_TEST_UNSET");
  c.front_ok = r.exit_code == 0;
  c.front_output = r.output;
  const std::string key = "\nCROSSTRAIN_AGENT_CONFIG=";
  const auto at = ("\n" + r.output).find(key);
  if (at != std::string::npos) {
    const size_t begin = at + key.size() - 1;
    c.handoff = r.output.substr(begin, r.output.find('\n', begin) - begin);
  }
}

// The agent's verdicts on each case's keywords and on the front's hand-off.
json ask_agent(const std::vector<Case>& cases, const fs::path& dir) {
  json in = json::array();
  for (const auto& c : cases) in.push_back({{"start", c.start}, {"handoff", c.handoff.empty() ? json() : json(c.handoff)}});
  std::ofstream(dir / "cases.json") << in.dump();
  const auto r = run_command(python() + " " + source_dir() + "/tests/python/run_option_verdicts.py < " +
                                 (dir / "cases.json").string(),
                             /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return json::parse(r.output);
}

json without_folders(json values) {
  values.erase("dump");
  values.erase("profile");
  return values;
}

}  // namespace

TEST(RunOptions, EveryOptionOfTheTableHasValuesTriedOnBothSides) {
  for (const auto& spec : table_options()) {
    const std::string name = spec["name"];
    ASSERT_TRUE(samples().count(name)) << "no values to try for " << name;
    const std::string type = spec["type"];
    bool refused_one = false;
    for (const auto& s : samples().at(name)) refused_one |= !s.valid;
    // A switch and a folder name take every value the command line can spell.
    if (type != "bool" && type != "path") EXPECT_TRUE(refused_one) << name << " is tried with no bad value";
  }
  for (const auto& [name, values] : samples()) {
    bool in_table = false;
    for (const auto& spec : table_options()) in_table |= spec["name"] == name;
    EXPECT_TRUE(in_table) << name << " is not an option any more";
  }
}

TEST(RunOptions, TheFlagAndTheKeywordGiveEachValueTheSameVerdict) {
  const auto dir = scratch_dir("run_options");
  auto cases = make_cases();
  for (auto& c : cases) ask_front(c, dir);
  const json agent = ask_agent(cases, dir);
  ASSERT_EQ(agent.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(c.label + "\n" + c.front_output);
    const json& start = agent[i]["start"];
    const json& handoff = agent[i]["handoff"];
    const bool start_ok = start.contains("values");
    // The run as a user sees it: refused by the front, or by the agent before the script runs.
    const bool run_ok = c.front_ok && handoff.is_object() && handoff.contains("values");
    EXPECT_EQ(start_ok, c.valid) << start.dump();
    EXPECT_EQ(run_ok, c.valid) << handoff.dump();
    // Everything but Python's regular expressions is refused by the front itself, before the command
    // starts, in one line naming the flag.
    if (c.spec["type"] != "regex") EXPECT_EQ(c.front_ok, c.valid);
    if (!c.front_ok) {
      EXPECT_EQ(c.front_output.rfind("crosstrain: error: --", 0), 0u);
      EXPECT_EQ(std::count(c.front_output.begin(), c.front_output.end(), '\n'), 1);
    }
    if (!start_ok) EXPECT_NE(start["error"].get<std::string>().find(c.option), std::string::npos) << start.dump();
    // What the flag handed over is what the keyword set.
    if (start_ok && run_ok) EXPECT_EQ(without_folders(handoff["values"]), without_folders(start["values"]));
  }
}

TEST(RunOptions, TheHandOffNamesEveryOptionWithTheTablesDefault) {
  const auto dir = scratch_dir("run_options_defaults");
  Case plain;
  ask_front(plain, dir);
  ASSERT_TRUE(plain.front_ok) << plain.front_output;
  const json handoff = json::parse(plain.handoff);
  const json table = table_options();
  EXPECT_EQ(handoff.size(), table.size()) << handoff.dump();
  for (const auto& spec : table) EXPECT_EQ(handoff.at(spec["name"].get<std::string>()), spec["default"]) << spec["name"];
  plain.start = json::object();
  const json agent = ask_agent({plain}, dir);
  EXPECT_EQ(agent[0]["handoff"]["values"], agent[0]["start"]["values"]);
}

TEST(RunOptions, HelpListsTheTablesFlagsWithTheirDefaults) {
  const auto r = run_command(binary() + " run --help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& spec : table_options()) {
    const std::string flag = flag_of(spec);
    const bool hidden = spec.value("hidden", false);
    EXPECT_EQ(r.output.find(flag + " ") != std::string::npos || r.output.find(flag + ",") != std::string::npos, !hidden)
        << flag;
    const json& d = spec["default"];
    if (!hidden && d.is_number_integer())
      EXPECT_NE(r.output.find(std::to_string(d.get<int64_t>())), std::string::npos) << flag;
  }
}

TEST(RunOptions, APythonRegexTheAgentRefusesEndsTheRunBeforeTheScriptsFirstLine) {
  const auto dir = scratch_dir("run_options_regex");
  const auto r = run_command("cd " + dir.string() + " && " + binary() + " run --dump d --dump-filter '(unclosed' -- " +
                             python() + " -c \"print('ran')\"");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.find("ran"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.rfind("crosstrain: error: --dump-filter '(unclosed' is not a regular expression", 0), 0u) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

// align's command form takes run's agent options from the same table: the same flags, the same
// verdicts, before either side starts or anything is written.
TEST(RunOptions, AlignsCommandFormChecksRunsOptionsBeforeEitherSideStarts) {
  const auto dir = scratch_dir("run_options_align");
  const std::string side = "\"touch ran\"";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--dump-level bogus", "--dump-level must be one of module, op, both, not 'bogus'"},
      {"--step-marker nocolon", "--step-marker takes MODULE:FUNC, not 'nocolon'"},
  };
  for (const auto& [flags, message] : bad) {
    const auto r = run_command("cd " + dir.string() + " && " + binary() + " align " + flags + " --out out --a " + side +
                               " --b " + side);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
    EXPECT_FALSE(fs::exists(dir / "ran")) << flags;
    EXPECT_FALSE(fs::exists(dir / "out")) << flags;
  }
  const auto help = run_command(binary() + " align --help");
  for (const char* name : {"dump_level", "deterministic", "step_marker"}) {
    json spec;
    for (const auto& e : table_options())
      if (e["name"] == name) spec = e;
    EXPECT_NE(help.output.find(spec["help"].get<std::string>()), std::string::npos) << name << "\n" << help.output;
  }
}
