// `crosstrain launch`: runs N workers per node with torchrun's environment (RANK, WORLD_SIZE,
// MASTER_ADDR, ...), without Python. The worker command follows `--`: a crosstrain command name
// (`-- train ...`) runs this same executable, anything else is a program run as is.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "report/envelope.h"
#include "tools/launch/launcher.h"
#include "tools/launch/nproc.h"
#include "tools/launch/worker_env.h"

namespace crosstrain::cli {

namespace {

struct LaunchArgs {
  std::string nproc_per_node = "1";
  bool standalone = false;
  std::string rdzv_backend = "static";
  std::string rdzv_endpoint;
  std::string nnodes = "1";
  int node_rank = 0;
  std::string master_addr = launch::kDefaultMasterAddr;
  int master_port = launch::kDefaultMasterPort;
  int max_restarts = 0;
  std::string run_id = launch::kDefaultRunId;
  double kill_timeout_s = 30;
  bool no_prefix = false;
  std::vector<std::string> command;
};

const char* kExamples = R"(
Examples:
  crosstrain launch --nproc-per-node 4 -- train --model resnet18 --steps 100
  crosstrain launch --nproc-per-node 2 -- python train.py --epochs 1
  crosstrain launch --nproc-per-node 8 --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 -- train ...
  crosstrain launch --nproc-per-node 2 --max-restarts 3 --master-port 0 -- ./worker.sh
  crosstrain launch --standalone --nproc_per_node=gpu -- python train.py   # torchrun's spellings

A first word after '--' that names a crosstrain command runs this crosstrain; any other is a
program found as the shell would (a '/' in it, or on PATH), run without an interpreter in front,
except a Python script that is no such program (`-- train.py ARGS`), which runs as torchrun runs it:
`python -u train.py ARGS`, with the python (else python3) on PATH.
--nproc-per-node takes a number or auto, cpu, gpu (cuda), npu: one worker per visible device of that
kind (auto: GPUs, else NPUs, else CPUs). torchrun's underscore spellings (--nproc_per_node,
--master_port, ...) are accepted too. Each worker gets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and torchrun's other
variables (docs/DISTRIBUTED.md). Exit status: 0, the first failing worker's status (128+N for
signal N), or 128+N when the launcher was stopped by signal N.
)";

// The words after `--` must be the whole worker command: a positional word before `--` would be
// read as one too, and flags meant for the worker would be taken as the launcher's.
void check_separator(const std::vector<std::string>& command) {
  const auto after = words_after_separator(report::command_line());
  const std::string usage = " (usage: crosstrain launch [OPTIONS] -- COMMAND [ARGS...])";
  if (!after || *after == 0) throw std::invalid_argument("launch needs the worker command after '--'" + usage);
  if (command.size() != *after)
    throw std::invalid_argument("launch: put the whole worker command after '--'" + usage);
}

bool is_crosstrain_command(const CLI::App& top, const std::string& word) {
  for (const CLI::App* sub : top.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->check_name(word)) return true;
  return false;
}

bool is_python_script(const std::string& word) {
  std::error_code ec;
  return word.size() > 3 && word.compare(word.size() - 3, 3, ".py") == 0 && std::filesystem::is_regular_file(word, ec);
}

// torchrun runs a script with its Python: `-- train.py ARGS` (a script that is no program on PATH)
// runs `python -u train.py ARGS` with the Python on PATH (python, else python3), said once.
launch::Program python_program(const std::vector<std::string>& command, const std::string& path) {
  launch::Program program;
  program.path = launch::find_program("python", path);
  if (program.path.empty()) program.path = launch::find_program("python3", path);
  if (program.path.empty())
    throw std::invalid_argument("launch: '" + command.front() + "' is a Python script, and no python or python3 is on PATH");
  program.argv = {program.path, "-u"};
  program.argv.insert(program.argv.end(), command.begin(), command.end());
  std::cerr << "crosstrain launch: running " << command.front() << " with " << program.path << " -u, as torchrun does"
            << std::endl;
  return program;
}

launch::Program worker_program(const CLI::App& top, const std::vector<std::string>& command) {
  launch::Program program;
  const std::string& first = command.front();
  if (first == "launch") throw std::invalid_argument("launch cannot launch itself ('-- launch ...')");
  if (is_crosstrain_command(top, first)) {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) throw std::runtime_error("launch: cannot locate this executable through /proc/self/exe: " + ec.message());
    program.path = self.string();
    program.argv.push_back(program.path);
    program.argv.insert(program.argv.end(), command.begin(), command.end());
    return program;
  }
  const char* path_variable = std::getenv("PATH");
  const std::string path = path_variable ? path_variable : "/usr/bin:/bin";
  program.path = launch::find_program(first, path);
  if (!program.path.empty()) {
    program.argv = command;
    return program;
  }
  if (is_python_script(first)) return python_program(command, path);
  throw std::invalid_argument("launch: '" + first + "' is neither a crosstrain command nor " +
                              (first.find('/') != std::string::npos ? "an executable file" : "a program on PATH"));
}

// Elastic node counts are torchrun's: the process becomes torchrun, which runs this command.
[[noreturn]] void hand_over_to_torchrun(const LaunchArgs& args, int nproc_per_node, const launch::NodeCount& nodes,
                                        const std::string& endpoint, const launch::Program& program) {
  launch::LaunchShape shape;  // checks what both kinds of launch share
  shape.nproc_per_node = nproc_per_node;
  shape.nnodes = nodes.max;
  shape.master_addr = args.master_addr;
  shape.master_port = args.master_port;
  shape.max_restarts = args.max_restarts;
  shape.run_id = args.run_id;
  launch::validate(shape);
  const char* path_variable = std::getenv("PATH");
  const std::string torchrun = launch::find_program("torchrun", path_variable ? path_variable : "");
  if (torchrun.empty())
    throw std::invalid_argument("launch: " + (args.rdzv_backend == "c10d" ? "--rdzv-backend c10d" : "--nnodes " + args.nnodes) +
                                " asks for elastic rendezvous, which needs torchrun on PATH (not found); "
                                "use a fixed --nnodes N with --node-rank on each node");
  launch::ElasticRequest request;
  request.nodes = nodes;
  request.nproc_per_node = nproc_per_node;
  request.rdzv_endpoint = endpoint;
  request.run_id = args.run_id;
  request.max_restarts = args.max_restarts;
  const auto line = launch::torchrun_argv(torchrun, request, program);
  std::cerr << "crosstrain launch: elastic rendezvous (--nnodes " << args.nnodes << ", c10d at " << endpoint
            << "): handing over to " << torchrun << std::endl;
  std::vector<char*> argv;
  for (const auto& a : line) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  ::execv(torchrun.c_str(), argv.data());
  throw std::runtime_error("launch: cannot run " + torchrun + ": " + std::strerror(errno));
}

// A symbolic --nproc-per-node becomes a number, said once on stderr.
int workers_per_node(const std::string& spec) {
  const int n = launch::resolve_nproc_per_node(spec, launch::visible_devices(launch::current_environment()));
  if (spec != std::to_string(n)) std::cerr << "crosstrain launch: --nproc-per-node " << spec << ": " << n << " workers" << std::endl;
  return n;
}

// At parse time, so the error names the flag: a count in range or one of the words (what the words
// resolve to is known only once the devices are looked at).
CLI::Validator nproc_spec() {
  auto check = [](std::string& text) -> std::string {
    if (launch::is_nproc_spec(text)) return {};
    const std::string shown = text.size() > 12 ? text.substr(0, 12) + "..." : text;
    return "must be an integer between 1 and " + std::to_string(launch::kMaxProcPerNode) +
           ", or auto, cpu, gpu (cuda), npu (got '" + shown + "')";
  };
  return CLI::Validator(check, "");
}

// torchrun's --standalone: one node, rendezvous on this host at a free port.
void apply_standalone(LaunchArgs& args, const CLI::App& cmd) {
  if (!args.standalone) return;
  for (const char* flag : {"--nnodes", "--node-rank", "--master-addr", "--master-port", "--rdzv-backend", "--rdzv-endpoint"})
    if (cmd.count(flag) > 0)
      throw std::invalid_argument(std::string("launch: --standalone runs one node on this host; drop ") + flag);
  args.nnodes = "1";
  args.master_addr = launch::kDefaultMasterAddr;
  args.master_port = 0;
}

// torchrun's rendezvous flags: static names rank 0's node (like --master-addr/--master-port); c10d
// lets nodes join without --node-rank, which torchrun does (the launch hands over to it).
// Returns the c10d endpoint, host:port.
std::string apply_rdzv(LaunchArgs& args, const CLI::App& cmd) {
  if (args.rdzv_backend != "static" && args.rdzv_backend != "c10d")
    throw std::invalid_argument("launch: --rdzv-backend " + args.rdzv_backend +
                                ": crosstrain launch takes static (rank 0's node from --rdzv-endpoint or --master-addr) "
                                "or c10d (handed over to torchrun)");
  if (args.rdzv_endpoint.empty()) return launch::format_endpoint({args.master_addr, args.master_port});
  if (cmd.count("--master-addr") > 0 || cmd.count("--master-port") > 0)
    throw std::invalid_argument("launch: give --rdzv-endpoint or --master-addr/--master-port, not both");
  const auto endpoint = launch::parse_endpoint(args.rdzv_endpoint, launch::kDefaultRdzvPort);
  args.master_addr = endpoint.host;
  args.master_port = endpoint.port;
  return launch::format_endpoint(endpoint);
}

void run(const CLI::App& top, const CLI::App& cmd, LaunchArgs args) {
  check_separator(args.command);
  apply_standalone(args, cmd);
  const std::string endpoint = apply_rdzv(args, cmd);
  launch::NodeCount nodes = launch::parse_nnodes(args.nnodes);
  if (args.rdzv_backend == "c10d") nodes.elastic = true;
  const launch::Program program = worker_program(top, args.command);
  const int nproc_per_node = workers_per_node(args.nproc_per_node);
  if (nodes.elastic) hand_over_to_torchrun(args, nproc_per_node, nodes, endpoint, program);

  launch::LaunchRequest request;
  request.shape.nproc_per_node = nproc_per_node;
  request.shape.nnodes = nodes.min;
  request.shape.node_rank = args.node_rank;
  request.shape.master_addr = args.master_addr;
  request.shape.master_port = args.master_port;
  request.shape.max_restarts = args.max_restarts;
  request.shape.run_id = args.run_id;
  request.program = program;
  request.prefix_output = !args.no_prefix;
  request.kill_timeout_s = args.kill_timeout_s;
  exit_with(launch::run_launch(request));
}

}  // namespace

void add_launch_command(CLI::App& app) {
  auto args = std::make_shared<LaunchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "launch", "Run N workers per node with torchrun's environment (RANK, WORLD_SIZE, ...), without Python");
  cmd->footer(kExamples);
  cmd->add_option("--nproc-per-node,--nproc_per_node", args->nproc_per_node,
                  "Workers on this node: N, or auto, cpu, gpu (cuda), npu for one per visible device")
      ->type_name("N|auto|cpu|gpu|npu")
      ->capture_default_str()
      ->check(nproc_spec());
  cmd->add_flag("--standalone", args->standalone, "One node: rendezvous on this host at a free port (torchrun's --standalone)");
  cmd->add_option("--nnodes", args->nnodes, "Nodes: N (static), or MIN:MAX for elastic rendezvous through torchrun")
      ->type_name("N|MIN:MAX")
      ->capture_default_str();
  cmd->add_option("--node-rank,--node_rank", args->node_rank, "This node's rank, 0 <= R < nnodes")->type_name("R")->capture_default_str()
      ->check(int_range(0, launch::kMaxNodes - 1));
  cmd->add_option("--master-addr,--master_addr", args->master_addr, "Address of rank 0's node (MASTER_ADDR)")
      ->type_name("ADDR")
      ->capture_default_str();
  cmd->add_option("--master-port,--master_port", args->master_port, "Port of rank 0's TCPStore (MASTER_PORT); 0 picks a free one")
      ->type_name("PORT")
      ->capture_default_str()
      ->check(int_range(0, 65535));
  cmd->add_option("--max-restarts,--max_restarts", args->max_restarts, "Restart all local workers up to K times when one fails")
      ->type_name("K")
      ->capture_default_str()
      ->check(int_range(0, 1e9));
  cmd->add_option("--rdzv-backend,--rdzv_backend", args->rdzv_backend,
                  "static: rank 0's node is the endpoint; c10d: nodes join without --node-rank (through torchrun)")
      ->type_name("static|c10d")
      ->capture_default_str();
  cmd->add_option("--rdzv-endpoint,--rdzv_endpoint", args->rdzv_endpoint,
                  "HOST[:PORT] of the rendezvous (port 29400 when left out), instead of --master-addr/--master-port")
      ->type_name("HOST[:PORT]");
  cmd->add_option("--rdzv-id,--rdzv_id", args->run_id, "Job id (TORCHELASTIC_RUN_ID)")->type_name("ID")->capture_default_str();
  cmd->add_option("--kill-timeout", args->kill_timeout_s,
                  "Seconds between SIGTERM (or a forwarded signal) and SIGKILL when stopping workers")
      ->type_name("SECONDS")
      ->capture_default_str()
      ->check(real_range(0, 1e6));
  cmd->add_flag("--no-prefix", args->no_prefix, "Leave the workers' output as it is (no '[rankN]: ' prefix per line)");
  cmd->add_option("command", args->command, "The worker command and its arguments, after '--' (required)")->type_name("COMMAND");
  const CLI::App* top = &app;
  cmd->callback([top, cmd, args]() { run(*top, *cmd, *args); });
}

}  // namespace crosstrain::cli
