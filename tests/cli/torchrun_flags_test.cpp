// Under `torchrun --no-python ... crosstrain train FLAGS`, torchrun's argparse reads the worker's
// flags as well: a flag that abbreviates several of torchrun's options stops the job before any
// worker starts ("ambiguous option: --log could match --log-dir, --log_dir, --logs-specs,
// --logs_specs"), and one that is a torchrun option or abbreviates only one passes today only
// because argparse leaves everything after the program alone once it has classified it. Every
// flag of the commands a torchrun worker runs (train, bench, comm-bench, doctor) therefore has a
// spelling that is neither one of torchrun's options nor a prefix of one, checked against the
// parser of the torchrun in .venv; and the real torchrun passes every such spelling through.
#include <CLI/CLI.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cli/command.h"
#include "test_support.h"

namespace ct = crosstrain::testing;

namespace {

struct Flag {
  std::string command;
  std::vector<std::string> names;  // "--step-log", "--log"
  bool takes_value = false;
};

// Every option of the worker commands, hidden ones included; --help is no worker's flag.
std::vector<Flag> worker_flags() {
  CLI::App app;
  crosstrain::cli::add_train_command(app);
  crosstrain::cli::add_bench_command(app);
  crosstrain::cli::add_comm_bench_command(app);
  crosstrain::cli::add_doctor_command(app);
  std::vector<Flag> flags;
  for (const CLI::App* cmd : app.get_subcommands([](const CLI::App*) { return true; }))
    for (const CLI::Option* opt : crosstrain::cli::command_options(*cmd)) {
      if (opt == cmd->get_help_ptr() || opt->get_lnames().empty()) continue;
      Flag f{cmd->get_name(), {}, opt->get_type_size() != 0};
      for (const auto& n : opt->get_lnames()) f.names.push_back("--" + n);
      for (const auto& n : opt->get_snames()) f.names.push_back("-" + n);
      flags.push_back(f);
    }
  return flags;
}

struct Torchrun {
  bool allow_abbrev = false;
  std::vector<std::string> options;
};

Torchrun read_torchrun_parser() {
  const auto r = ct::run_python_script("torchrun_options.py", "");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  Torchrun t;
  std::istringstream lines(r.output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("allow_abbrev=", 0) == 0) t.allow_abbrev = line == "allow_abbrev=True";
    else if (line.rfind("-", 0) == 0) t.options.push_back(line);
  }
  return t;
}

const Torchrun& torchrun_parser() {  // read once: importing torch takes seconds
  static const Torchrun t = read_torchrun_parser();
  return t;
}

// The torchrun options `name` is or abbreviates (argparse matches an option that starts with it).
std::vector<std::string> collisions(const std::string& name, const Torchrun& t) {
  std::vector<std::string> hit;
  for (const auto& o : t.options)
    if (o == name || (t.allow_abbrev && o.rfind(name, 0) == 0)) hit.push_back(o);
  return hit;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

}  // namespace

TEST(TorchrunFlags, EveryWorkerFlagHasASpellingTorchrunLeavesAlone) {
  const Torchrun& t = torchrun_parser();
  ASSERT_GT(t.options.size(), 20u) << "torchrun's parser was not read";
  // The check sees the collision that stopped `train --log` under torchrun.
  EXPECT_EQ(joined(collisions("--log", t)), "--log-dir --log_dir --logs-specs --logs_specs");
  const auto flags = worker_flags();
  ASSERT_GT(flags.size(), 80u);
  for (const auto& f : flags) {
    bool safe = false;
    std::string why;
    for (const auto& n : f.names) {
      const auto hit = collisions(n, t);
      safe = safe || hit.empty();
      if (!hit.empty()) why += " " + n + " matches " + joined(hit) + ";";
    }
    EXPECT_TRUE(safe) << f.command << ": every spelling of " << joined(f.names) << " collides under torchrun:" << why;
  }
}

// The real torchrun, each worker command with every spelling the check above calls safe: the
// program receives its command line unchanged. The old --log stops torchrun itself.
TEST(TorchrunFlags, TorchrunPassesEverySafeSpellingThrough) {
  const Torchrun& t = torchrun_parser();
  const auto dir = ct::scratch_dir("torchrun_flags");
  const auto recorder = dir / "record_argv.sh", received = dir / "argv.txt";
  {
    std::ofstream sh(recorder);
    sh << "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" << received.string() << "'\n";
  }
  ::chmod(recorder.c_str(), 0755);
  std::vector<std::string> sent;
  for (const auto& f : worker_flags()) {
    if (sent.empty() || std::find(sent.begin(), sent.end(), f.command) == sent.end()) sent.push_back(f.command);
    for (const auto& n : f.names) {
      if (!collisions(n, t).empty()) continue;
      sent.push_back(n);
      if (f.takes_value) sent.push_back("1");
    }
  }
  const std::string torchrun = ct::python() + " -m torch.distributed.run --standalone --nproc-per-node 1 --no-python ";
  auto r = ct::run_command(torchrun + recorder.string() + " " + joined(sent));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(received);
  std::vector<std::string> got;
  for (std::string line; std::getline(in, line);) got.push_back(line);
  EXPECT_EQ(joined(got), joined(sent));

  r = ct::run_command(torchrun + recorder.string() + " train --log steps.jsonl");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("ambiguous option: --log could match"), std::string::npos) << r.output;
}
