// `crosstrain run` through the binary: the user's command under the agent, its exit status and
// signals, the dump folder's safety, and real third-party models (timm, transformers, torchvision)
// dumped twice, disturbed on one side, aligned, and started from the script itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
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

namespace {

std::string scripts() { return source_dir() + "/tests/python/run_scripts"; }

// `crosstrain run ARGS -- python SCRIPT SCRIPT_ARGS` in `dir`.
crosstrain::testing::CommandResult run_script(const fs::path& dir, const std::string& run_args, const std::string& script,
                                              const std::string& script_args = "") {
  return run_command("cd " + dir.string() + " && " + binary() + " run " + run_args + " -- " + python() + " " + scripts() +
                     "/" + script + " " + script_args);
}

std::vector<nlohmann::json> records(const fs::path& dump) {
  std::ifstream in(dump / "index.jsonl");
  std::vector<nlohmann::json> out;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::string records_text(const fs::path& dump) {
  const std::string all = read_bytes(dump / "index.jsonl");
  return all.substr(all.find('\n') + 1);  // without the header, which names the producer
}

nlohmann::json compare_json(const fs::path& a, const fs::path& b, int* exit_code) {
  auto r = run_command(binary() + " compare " + a.string() + " " + b.string() + " --json -", /*merge_stderr=*/false);
  *exit_code = r.exit_code;
  return nlohmann::json::parse(r.output);
}

}  // namespace

TEST(RunCli, TheCommandsExitStatusPassesThroughAndANonPythonCommandIsSaid) {
  auto r = run_command(binary() + " run -- /bin/sh -c 'echo out; exit 7'");
  EXPECT_EQ(r.exit_code, 7) << r.output;
  EXPECT_NE(r.output.find("out\n"), std::string::npos);
  EXPECT_NE(r.output.find("neither a Python interpreter nor a Python script"), std::string::npos) << r.output;
  // A signal that ends the command ends crosstrain the same way: the shell sees 128 + 15.
  r = run_command("sh -c '" + binary() + " run -- /bin/sh -c \"kill -TERM \\$\\$\" 2>/dev/null; echo status=$?'");
  EXPECT_NE(r.output.find("status=143"), std::string::npos) << r.output;
}

TEST(RunCli, ACommandThatCannotStartOrAMalformedRunIsOneLineAndExitTwo) {
  for (const std::string args : {"run -- no-such-program-xyz", "run --dump-level layers --dump d -- true",
                                 "run --dump-steps 3-1 --dump d -- true", "run --step-marker nocolon -- true",
                                 "run --dump-mode tensors -- true", "run python x.py"}) {
    auto r = run_command(binary() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << "\n" << r.output;
  }
}

TEST(RunCli, AFolderHoldingADumpIsKeptUnlessOverwrite) {
  const auto dir = scratch_dir("run_overwrite");
  fs::create_directories(dir / "d" / "rank1");
  std::ofstream(dir / "d" / "rank1" / "index.jsonl") << "{\"format\":\"crosstrain-dump\"}\n";
  std::ofstream(dir / "d" / "notes.txt") << "the user's own file\n";
  auto r = run_command("cd " + dir.string() + " && " + binary() + " run --dump d -- true");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--dump-overwrite"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "d" / "rank1" / "index.jsonl"));
  r = run_command("cd " + dir.string() + " && " + binary() + " run --dump d --dump-overwrite -- true");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(dir / "d" / "rank1"));
  EXPECT_TRUE(fs::exists(dir / "d" / "notes.txt"));  // only the dump's own files go
}

// A command ended by a signal in the middle of a step (a preempted job): the steps before it are in
// the dump whole, and the summary says the step in progress was lost, not that no step ran.
TEST(RunCli, ASignalMidStepKeepsTheStepsBeforeAndSaysWhatWasLost) {
  const auto dir = scratch_dir("run_killed");
  auto first = run_script(dir, "--dump first --dump-level both", "killed_mid_step.py", "0");
  EXPECT_EQ(first.exit_code, 143) << first.output;
  EXPECT_NE(first.output.find("ended by signal 15 before its first step ended"), std::string::npos) << first.output;
  EXPECT_EQ(first.output.find("no optimizer step ran"), std::string::npos) << first.output;
  EXPECT_EQ(first.output.find("python -I"), std::string::npos) << first.output;

  auto second = run_script(dir, "--dump second --dump-level both --dump-steps 0-3", "killed_mid_step.py", "2");
  EXPECT_EQ(second.exit_code, 143) << second.output;
  EXPECT_NE(second.output.find(": 2 steps; dump "), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("those of the step it was in were lost"), std::string::npos) << second.output;
  std::set<int64_t> steps;
  for (const auto& rec : records(dir / "second")) steps.insert(rec["step"].get<int64_t>());
  EXPECT_EQ(steps, (std::set<int64_t>{0, 1}));

  // SIGINT is a KeyboardInterrupt: Python's exit handlers run, the agent writes the step in progress,
  // and the summary says so instead of claiming it was lost.
  auto third = run_script(dir, "--dump third --dump-level both --dump-steps 0-3", "killed_mid_step.py", "2 int");
  EXPECT_EQ(third.exit_code, 130) << third.output;
  EXPECT_NE(third.output.find("the records of the step it was in were written"), std::string::npos) << third.output;
  EXPECT_EQ(third.output.find("were lost"), std::string::npos) << third.output;
  steps.clear();
  for (const auto& rec : records(dir / "third")) steps.insert(rec["step"].get<int64_t>());
  EXPECT_EQ(steps, (std::set<int64_t>{0, 1, 2}));
}

// A float64 program: the loss log keeps every digit of its losses, the agent adds no operator of its
// own to the step (the loss's copy for the log is the agent's), and a learning rate changed by one
// part in a million is a difference at float64's limits, though the script keeps a float32 metric.
TEST(RunCli, AFloat64ProgramIsJudgedAtFloat64sLimits) {
  const auto dir = scratch_dir("run_float64");
  const std::string args = "--dump-level both --dump-steps 0-1 ";
  auto a = run_script(dir, args + "--dump a", "train_float64.py", "0.1");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  auto b = run_script(dir, args + "--dump b", "train_float64.py", "0.1000001");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  // The losses the script printed (repr: every digit) are the log's, to the bit.
  std::ifstream log(dir / "a" / "loss.jsonl");
  std::string line;
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(std::getline(log, line));
    const double logged = nlohmann::json::parse(line)["loss"].get<double>();
    const std::string printed = "loss " + std::to_string(step) + " ";
    const size_t at = a.output.find(printed);
    ASSERT_NE(at, std::string::npos) << a.output;
    EXPECT_EQ(logged, std::stod(a.output.substr(at + printed.size()))) << line;
  }
  // Float32 records are the script's metric only: none comes from the line that runs backward().
  for (const auto& rec : records(dir / "a"))
    if (rec["dtype"] == "float32" && rec.contains("op"))
      EXPECT_NE(rec["op"].value("code", ""), "loss.backward()") << rec.dump();
  int code = -1;
  const auto cmp = compare_json(dir / "a", dir / "b", &code);
  EXPECT_EQ(code, 1) << cmp.dump();
  ASSERT_FALSE(cmp["first_divergence"].is_null()) << cmp.dump();
  EXPECT_EQ(cmp["first_divergence"]["step"], 1);
  EXPECT_TRUE(cmp["thresholds"]["by_dtype"].contains("float64")) << cmp["thresholds"].dump();
}

// Third-party models users train: same seed, same dumps; a disturbed operator on one side is the
// first divergence, named with its module and source line.
class RunRealModel : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(RunRealModel, SameSeedGivesIdenticalDumpsAndADisturbedOperatorIsTheFirstDivergence) {
  const auto& [script, victim_module] = GetParam();
  const auto dir = scratch_dir("run_model");
  const std::string dump_args = "--seed 0 --dump-level both --dump-steps 0 ";
  auto a = run_script(dir, dump_args + "--dump a", script, "--steps 2");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find(": 2 steps; dump "), std::string::npos) << a.output;
  auto b = run_script(dir, dump_args + "--dump b", script, "--steps 2");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(records_text(dir / "a"), records_text(dir / "b"));
  EXPECT_EQ(read_bytes(dir / "a" / "loss.jsonl"), read_bytes(dir / "b" / "loss.jsonl"));

  // The disturbed record: the first forward operator that runs in `victim_module`.
  std::string victim;
  for (const auto& rec : records(dir / "a"))
    if (rec["kind"] == "op_forward" && rec["op"]["module"] == victim_module) {
      victim = rec["name"];
      break;
    }
  ASSERT_FALSE(victim.empty()) << "no operator in " << victim_module;
  auto c = run_script(dir, dump_args + "--dump c --test-perturb '" + victim + "=1.0'", script, "--steps 2");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  int code = -1;
  const auto cmp = compare_json(dir / "a", dir / "c", &code);
  EXPECT_EQ(code, 1);
  ASSERT_FALSE(cmp["first_divergence"].is_null());
  EXPECT_EQ(cmp["first_divergence"]["name"], victim);
  EXPECT_EQ(cmp["first_divergence"]["origin"]["module"], victim_module);
  EXPECT_FALSE(cmp["first_divergence"]["origin"]["source"].get<std::string>().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Models, RunRealModel,
    ::testing::Values(std::pair<std::string, std::string>{"train_timm_vit.py", "blocks.1.mlp.fc1"},
                      std::pair<std::string, std::string>{"train_timm_cnn.py", "layer3.0.conv1"},
                      std::pair<std::string, std::string>{"train_gpt2.py", "transformer.h.1.attn.c_attn"},
                      std::pair<std::string, std::string>{"train_segmentation.py", "backbone.4.block.1.0"}),
    [](const auto& info) { return info.param.first.substr(6, info.param.first.size() - 9); });

// The losses a script prints, one per step ("step N loss X").
std::vector<std::string> printed_losses(const std::string& output) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = output.find(" loss ", at)) != std::string::npos) {
    const size_t end = output.find('\n', at);
    out.push_back(output.substr(at + 6, end - at - 6));
    at = end;
  }
  return out;
}

TEST(RunCli, RecordingEveryOperatorLeavesTheLossesBitwiseEqual) {
  // GPT-2 with dropout: the dispatch mode and the statistics must not draw from any generator.
  const auto dir = scratch_dir("run_bitwise");
  auto plain = run_script(dir, "--seed 0", "train_gpt2.py", "--steps 3");
  auto dumped = run_script(dir, "--seed 0 --dump d --dump-level both --dump-steps 0-2", "train_gpt2.py", "--steps 3");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  ASSERT_EQ(dumped.exit_code, 0) << dumped.output;
  EXPECT_EQ(printed_losses(plain.output).size(), 3u) << plain.output;
  EXPECT_EQ(printed_losses(plain.output), printed_losses(dumped.output));
}

TEST(RunCli, WithoutASeedTheScriptsOwnRandomnessMakesRunsDiffer) {
  // The scripts seed nothing: what --seed adds is what makes the runs above identical.
  const auto dir = scratch_dir("run_noseed");
  ASSERT_EQ(run_script(dir, "--dump a", "train_gpt2.py", "--steps 1").exit_code, 0);
  ASSERT_EQ(run_script(dir, "--dump b", "train_gpt2.py", "--steps 1").exit_code, 0);
  EXPECT_NE(records_text(dir / "a"), records_text(dir / "b"));
}

TEST(RunCli, UnderTorchrunEachRankDumpsIntoItsOwnFolder) {
  const auto dir = scratch_dir("run_torchrun");
  const std::string torchrun = fs::path(python()).parent_path().string() + "/torchrun";
  auto r = run_command("cd " + dir.string() + " && OMP_NUM_THREADS=1 " + binary() +
                       " run --seed 0 --dump d --dump-level both -- " + torchrun +
                       " --standalone --nproc-per-node 2 " + scripts() + "/train_ddp.py --steps 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* rank : {"rank0", "rank1"}) {
    ASSERT_TRUE(fs::exists(dir / "d" / rank / "index.jsonl")) << rank << "\n" << r.output;
    // DDP is transparent: the model's own names, as in one process.
    bool named = false;
    for (const auto& rec : records(dir / "d" / rank)) named |= rec["name"] == "forward/0";
    EXPECT_TRUE(named) << rank;
  }
  EXPECT_NE(r.output.find("rank 0 (pid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 1 (pid"), std::string::npos) << r.output;
  // Parameter gradients are all-reduced: the ranks agree on them although their batches differ.
  int code = -1;
  auto cmp = compare_json(dir / "d" / "rank0", dir / "d" / "rank1", &code);
  bool grads_agree = true, outputs_differ = false;
  for (const auto& t : cmp["tensors"]) {
    const std::string name = t["name"];
    if (name.rfind("param_grad/", 0) == 0) grads_agree &= t["verdict"] != "error";
    if (name.rfind("forward/", 0) == 0) outputs_differ |= t["verdict"] == "error";
  }
  EXPECT_TRUE(grads_agree);
  EXPECT_TRUE(outputs_differ);
}

TEST(RunCli, TheAgentInstalledWithPipWritesWhatRunWrites) {
  const auto dir = scratch_dir("run_pip");
  fs::copy(source_dir() + "/python", dir / "src", fs::copy_options::recursive);
  auto pip = run_command(python() + " -m pip install -q --no-build-isolation --no-deps --target " + (dir / "site").string() +
                         " " + (dir / "src").string());
  ASSERT_EQ(pip.exit_code, 0) << pip.output;
  // The distribution pip installed is `crosstrain`, the package it imports as, at the project's version,
  // with the results reader inside.
  auto names = run_command("PYTHONPATH=" + (dir / "site").string() + " " + python() +
                           " -c \"import importlib.metadata as m, crosstrain.results; "
                           "print(m.version('crosstrain'), m.packages_distributions()['crosstrain'], "
                           "crosstrain.results.__file__)\"");
  ASSERT_EQ(names.exit_code, 0) << names.output;
  EXPECT_EQ(names.output.rfind(std::string(CROSSTRAIN_VERSION) + " ['crosstrain'] " + (dir / "site").string() +
                               "/crosstrain/results/__init__.py", 0),
            0u)
      << names.output;
  // With the compiled statistics run hands its agent (CROSSTRAIN_AGENT_NATIVE), the records are
  // equal to the bit; without them the Python path's sums differ in their last digits
  // (tests/python/agent/test_native.py compares the two).
  const std::string native = (fs::path(binary()).parent_path() / "libcrosstrain_tensor_stats.so").string();
  auto direct = run_command("cd " + dir.string() + " && CROSSTRAIN_AGENT_NATIVE=" + native + " PYTHONPATH=" +
                            (dir / "site").string() + " " + python() + " " + scripts() + "/start_from_script.py from_script 3");
  ASSERT_EQ(direct.exit_code, 0) << direct.output;
  // Under run the script's own start() finds the agent run loaded and changes nothing.
  auto via_run = run_script(dir, "--seed 0 --dump from_run --dump-level both --dump-steps 0-1", "start_from_script.py",
                            "ignored 3");
  ASSERT_EQ(via_run.exit_code, 0) << via_run.output;
  EXPECT_FALSE(fs::exists(dir / "ignored"));
  EXPECT_EQ(records_text(dir / "from_script"), records_text(dir / "from_run"));
  EXPECT_EQ(read_bytes(dir / "from_script" / "loss.jsonl"), read_bytes(dir / "from_run" / "loss.jsonl"));
  EXPECT_GT(records(dir / "from_run").size(), 20u);
}

TEST(RunCli, StopOnNonfiniteNamesTheOperatorAndLineAndStops) {
  const auto dir = scratch_dir("run_nonfinite");
  std::ofstream(dir / "nan.py") << "import torch\n"
                                   "model = torch.nn.Linear(4, 4)\n"
                                   "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                                   "for step in range(3):\n"
                                   "    h = model(torch.randn(8, 4))\n"
                                   "    loss = torch.sqrt(h).sum()\n"
                                   "    loss.backward(); opt.step(); opt.zero_grad()\n"
                                   "print('finished')\n";
  auto r = run_command("cd " + dir.string() + " && " + binary() + " run --stop-on-nonfinite -- " + python() + " nan.py");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.find("finished"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("op_forward/aten.sqrt"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nan.py:6"), std::string::npos) << r.output;
}

TEST(RunCli, AlignTwoCommandsAgreesAndADisturbedSideDiffersAtThatOperator) {
  const auto dir = scratch_dir("run_align");
  const std::string mlp = python() + " " + scripts() + "/start_from_script.py ignored 2";
  auto same = run_command("cd " + dir.string() + " && " + binary() + " align --a \"" + mlp + "\" --b \"" + mlp +
                          "\" --out same --dump-level op --json same.json");
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find("the runs agree"), std::string::npos) << same.output;
  auto diff = run_command("cd " + dir.string() + " && " + binary() + " align --a \"" + mlp + "\" --b \"" + mlp +
                          "\" --out diff --dump-level op --test-perturb 'op_forward/1/aten.relu=0.5' --json diff.json");
  EXPECT_EQ(diff.exit_code, 1) << diff.output;
  const auto j = nlohmann::json::parse(read_bytes(dir / "diff.json"));
  EXPECT_EQ(j["first_divergence"]["name"], "op_forward/1/aten.relu");
  // One command, two environments: the side whose environment changes what the script computes differs.
  std::ofstream(dir / "env.py") << "import os, torch\n"
                                   "torch.manual_seed(0)\n"
                                   "m = torch.nn.Linear(3, 3); opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
                                   "scale = float(os.environ['SCALE'])\n"
                                   "for _ in range(2):\n"
                                   "    (m(torch.ones(2, 3)) * scale).sum().backward(); opt.step(); opt.zero_grad()\n";
  auto env = run_command("cd " + dir.string() + " && " + binary() +
                         " align --a-env SCALE=1 --b-env SCALE=2 --out env --dump-level op -- " + python() + " env.py");
  EXPECT_EQ(env.exit_code, 1) << env.output;
  EXPECT_NE(env.output.find("first divergence: step 0 op_forward/aten.mul"), std::string::npos) << env.output;
  // Mixed forms and crosstrain model flags with commands are caller mistakes.
  auto mixed = run_command(binary() + " align --a \"device=cpu\" --b \"python x.py\"");
  EXPECT_EQ(mixed.exit_code, 2) << mixed.output;
  auto model_flag = run_command(binary() + " align --a \"python x.py\" --b \"python x.py\" --model resnet50");
  EXPECT_EQ(model_flag.exit_code, 2) << model_flag.output;
}
