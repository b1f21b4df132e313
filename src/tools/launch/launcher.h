#pragma once
// `crosstrain launch` without its command line: runs the local workers of a static launch with
// torchrun's worker environment, restarts them on failure up to max_restarts times, and turns the
// outcome into the launcher's exit status. Elastic launches (a node range) are torchrun's: the
// command line handed to it is built here too.
//
//   LaunchRequest r;  r.shape.nproc_per_node = 2;  r.program = {"/bin/sh", {"sh", "-c", "..."}};
//   int status = run_launch(r);   // 0, the first failing worker's status, or 128 + a stop signal
//
// Torch-free. docs/DISTRIBUTED.md ("launch") describes the contract and the exit statuses.
#include <string>
#include <vector>

#include "tools/launch/worker_env.h"
#include "tools/launch/worker_group.h"

namespace crosstrain::launch {

struct LaunchRequest {
  LaunchShape shape;
  Program program;
  bool prefix_output = true;
  double kill_timeout_s = 30;
  Environment extra_env;  // set for every worker on top of the launcher's own environment
};

// Runs the launch to its end and returns the exit status; the launcher's messages go to stderr
// as "crosstrain launch: ...". Throws std::invalid_argument for a shape validate() rejects.
int run_launch(LaunchRequest request);

// A TCP port nothing listens on now (bound and released; another process may take it later).
int pick_free_port();

// The executable `name` would run as: itself when it holds a '/', else the first executable of
// that name on PATH. Empty when there is none.
std::string find_program(const std::string& name, const std::string& path_variable);

// `--nnodes`: "N" (static) or "MIN:MAX" (elastic, through torchrun).
struct NodeCount {
  int min = 1;
  int max = 1;
  bool elastic = false;
};
NodeCount parse_nnodes(const std::string& text);  // std::invalid_argument when malformed

// A rendezvous endpoint: "host", "host:port", "[v6addr]" or "[v6addr]:port" (torchrun's
// --rdzv-endpoint); the port is default_port when left out. std::invalid_argument when malformed.
constexpr int kDefaultRdzvPort = 29400;  // torchrun's
struct Endpoint {
  std::string host;  // without brackets
  int port = kDefaultRdzvPort;
};
Endpoint parse_endpoint(const std::string& text, int default_port);
std::string format_endpoint(const Endpoint& e);  // host:port, an IPv6 host in brackets

// torchrun's command line for an elastic launch of `program` (run with --no-python).
struct ElasticRequest {
  NodeCount nodes;
  int nproc_per_node = 1;
  std::string rdzv_endpoint;  // host:port of the c10d rendezvous
  std::string run_id = kDefaultRunId;
  int max_restarts = 0;
};
std::vector<std::string> torchrun_argv(const std::string& torchrun, const ElasticRequest& request,
                                       const Program& program);

}  // namespace crosstrain::launch
