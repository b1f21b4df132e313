// `crosstrain align`: the same training on two setups, both dumped, then compared: does B compute
// what A computes, and if not, where do they first part?
//   --a "device=cpu precision=fp32" --b "..."   crosstrain's own models (align::run_align, in the
//                                               engine; tools/align/align_run.h)
//   --a "python train.py ..." --b "..."         the user's own command twice under `run`
//   --a-env "K=V" --b-env "K=V" -- COMMAND       one command, two environments (tools/run/align_commands.h)
// This file holds the flags and picks the form.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/dump_flags.h"
#include "cli/flag_checks.h"
#include "cli/table_flags.h"
#include "cli/train_flags.h"
#include "report/envelope.h"
#include "report/output.h"
#include "tools/commands/commands.h"
#include "tools/compare/compare_report.h"
#include "tools/run/align_commands.h"
#include "tools/run/command_words.h"

namespace crosstrain::cli {

namespace {

struct CommandFlags {
  std::string a_env, b_env;
  std::vector<std::string> command;
  TableFlags agent;  // run's options that set both sides' agents (kAgentOptions)
};

// Options of `crosstrain run` that the command form takes as run does (their flags, help and checks
// come from run's table); --seed, --dump-steps and --dump-mode are shared with crosstrain's own runs.
constexpr const char* kAgentOptions[] = {"dump_level", "deterministic", "step_marker", "test_perturb"};
// Both sides record modules and operators unless asked otherwise.
constexpr const char* kAlignDumpLevel = "both";

// The flags of the command form; any other one given with commands is a mistake (it would be
// silently ignored).
bool command_form_flag(const CLI::Option& o) {
  for (const char* f : {"--a", "--b", "--a-env", "--b-env", "--out", "--json", "--html", "--strict", "--seed",
                        "--dump-steps", "--dump-mode", "--dump-level", "--deterministic", "--step-marker",
                        "--test-perturb", "command", "--help"})
    if (o.check_name(f)) return true;
  return false;
}

std::map<std::string, std::string> parse_env(const std::string& text, const char* flag) {
  std::map<std::string, std::string> env;
  if (text.empty()) return env;
  run::CommandWords w;
  try {
    w = run::split_command(text + " _");  // the assignments of a command with a placeholder program
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(flag) + ": " + e.what());
  }
  if (w.argv.size() != 1) throw std::invalid_argument(std::string(flag) + " takes NAME=VALUE words, not '" + text + "'");
  return w.env;
}

int align_command_form(CLI::App* cmd, const commands::AlignArgs& args, const CommandFlags& cf) {
  for (const CLI::Option* o : cmd->get_options())
    if (o->count() > 0 && !command_form_flag(*o))
      throw std::invalid_argument(o->get_name(false, true) + " sets crosstrain's own model runs; with commands, put the setting "
                                                  "into the commands themselves");
  const auto& f = args.options;
  run::AlignCommands req;
  req.a = f.a;
  req.b = f.b;
  req.a_env = parse_env(cf.a_env, "--a-env");
  req.b_env = parse_env(cf.b_env, "--b-env");
  req.command = cf.command;
  if (!req.command.empty() && (!req.a.empty() || !req.b.empty()))
    throw std::invalid_argument("align: give the sides either as --a/--b commands or as --a-env/--b-env with one command after '--', not both");
  if (req.command.empty() && (req.a.empty() || req.b.empty()))
    throw std::invalid_argument("align needs --a and --b (a setup or a command each), or --a-env/--b-env and a command after '--'");
  req.out = f.out;
  auto& shared = req.shared.options;
  shared.set("seed", f.base.seed);
  shared.set("dump_steps", f.dump.steps);
  shared.set("dump_mode", f.dump.mode);
  shared.set("dump_level", kAlignDumpLevel);
  cf.agent.take(shared);
  req.compare.strict = f.strict;
  run::AlignCommandsResult r;
  try {
    r = run::align_commands(req, agent_run_options());
  } catch (const run::AlignSideError& e) {
    std::cerr << "crosstrain: error: " << e.what() << "\n";
    return compare::kNoVerdictExit;
  } catch (const compare::UnreadableInput& e) {
    std::cerr << "crosstrain: error: the dumps in " << r.out_dir << " cannot be compared: " << e.what() << "\n";
    return compare::kNoVerdictExit;
  }
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& w : v) s += (s.empty() ? "" : " ") + w;
    return s;
  };
  if (!args.json.empty()) {
    auto doc = compare::compare_to_json(r.result);
    doc["a"] = joined(r.a_argv);
    doc["b"] = joined(r.b_argv);
    doc["out"] = r.out_dir;
    report::write_json(report::with_envelope("align", std::move(doc)), args.json);
  }
  if (!args.html.empty()) report::write_file_atomic(args.html, compare::compare_to_html(r.result));
  std::ostream& os = report::json_to_stdout(args.json) ? std::cerr : std::cout;
  os << "A: " << joined(r.a_argv) << "\nB: " << joined(r.b_argv) << "\n" << compare::render_compare_console(r.result);
  os << (r.result.agree ? "align: the runs agree\n" : "align: the runs differ\n");
  return r.result.agree ? 0 : 1;
}

bool command_form(const commands::AlignArgs& args, const CommandFlags& cf) {
  const auto& f = args.options;
  if (!cf.command.empty() || !cf.a_env.empty() || !cf.b_env.empty()) return true;
  return (!f.a.empty() && !run::looks_like_key_values(f.a)) || (!f.b.empty() && !run::looks_like_key_values(f.b));
}

}  // namespace

void add_align_command(CLI::App& app) {
  auto args = std::make_shared<commands::AlignArgs>();
  auto cf = std::make_shared<CommandFlags>();
  auto& f = args->options;
  auto& c = f.base;
  namespace lim = train::limits;
  c.steps = 3;
  c.warmup_steps = 0;
  f.dump.mode = "tensors";
  auto* cmd = app.add_subcommand(
      "align",
      "Run the same training twice on two setups (same seed, weights and batches), dump both and compare "
      "them: the verdict and the first divergence. Sides are crosstrain model setups (\"device=cpu "
      "precision=bf16\") or your own commands (\"python train.py --device cpu\"). Exit 0 when the runs agree, "
      "1 when they differ, 3 when a side could not run.");
  cmd->add_option("--a", f.a, "Reference: a setup, e.g. \"device=cpu precision=fp32\" (keys: device, precision, "
                              "threads, channels_last, backend_lib, loss_scale, nproc, accumulate_steps), or a command, "
                              "e.g. \"python train.py --device cpu\"");
  cmd->add_option("--b", f.b, "Candidate: a setup, e.g. \"device=cpu precision=bf16\" or \"nproc=2\", or a command, "
                              "e.g. \"torchrun --nproc-per-node 2 train.py\"");
  cmd->add_option("--out", f.out, "Directory for the dumps (default: a new align-<time> directory here)")
      ->type_name("DIR");
  add_json_option(cmd, args->json);
  cmd->add_option("--html", args->html, "Write the comparison as a self-contained HTML page")->type_name("PATH");
  cmd->add_flag("--strict", f.strict, "Warnings make the runs differ");
  const char* user = "Your own command (docs/RUN.md)";
  CLI::App* agent_group = cmd->add_option_group(user);
  agent_group->add_option("--a-env", cf->a_env, "Side A's environment for the command after '--': NAME=VALUE ...");
  agent_group->add_option("--b-env", cf->b_env, "Side B's environment for the command after '--'");
  for (const char* name : kAgentOptions) cf->agent.add(cmd, agent_group, run::run_option(name));
  agent_group->get_option("--dump-level")->default_str(kAlignDumpLevel);
  cmd->add_option("command", cf->command, "With --a-env/--b-env: the command, after '--'");
  const char* model = "Model";
  cmd->add_option("--model", c.model, "resnet18 | resnet34 | resnet50 | resnet101 | resnet152")->capture_default_str()->group(model);
  cmd->add_option("--weights", c.weights_in, "Initial state dict for both sides (default: from --seed)")
      ->type_name("PATH")->group(model);
  const char* run = "Run";
  cmd->add_option("--batch-size", c.batch_size, "Images per step")->capture_default_str()->check(int_range(1, lim::kMaxBatchSize))->group(run);
  cmd->add_option("--image-size", c.image_size, "Square input size in pixels")->capture_default_str()
      ->check(int_range(lim::kMinImageSize, lim::kMaxImageSize))->group(run);
  cmd->add_option("--steps", c.steps, "Training steps per side (all loss-logged)")->capture_default_str()
      ->check(int_range(1, lim::kMaxSteps))->group(run);
  add_common_train_flags(cmd, c);
  add_dump_flags(cmd, f.dump, /*with_dir=*/false);
  cmd->callback([cmd, args, cf] {
    if (command_form(*args, *cf)) {
      // The user's commands record statistics unless asked for tensors: an operator-level tensors dump
      // of a whole model is large.
      if (cmd->count("--dump-mode") == 0) args->options.dump.mode = "stats";
      exit_with(align_command_form(cmd, *args, *cf));
      return;
    }
    if (args->options.a.empty() || args->options.b.empty())
      throw std::invalid_argument("align needs --a and --b (e.g. --a \"device=cpu precision=fp32\" --b \"device=cpu precision=bf16\")");
    exit_with(commands::align_command(*args));
  });
}

}  // namespace crosstrain::cli
