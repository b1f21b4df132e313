#include "tools/launch/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "tools/launch/output_sink.h"

namespace crosstrain::launch {

namespace {

std::vector<std::string> environment_block(const Environment& base, const Environment& overrides) {
  Environment all = base;
  for (const auto& [name, value] : overrides) all[name] = value;
  std::vector<std::string> block;
  block.reserve(all.size());
  for (const auto& [name, value] : all) block.push_back(name + "=" + value);
  return block;
}

int parse_count(const std::string& text, const std::string& what) {
  size_t used = 0;
  long value = -1;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < 1 || value > kMaxNodes)
    throw std::invalid_argument("launch: --nnodes takes N or MIN:MAX with whole numbers from 1 to " +
                                std::to_string(kMaxNodes) + ", got '" + what + "'");
  return static_cast<int>(value);
}

}  // namespace

int pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("launch: cannot open a socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int saved = errno;
    ::close(fd);
    throw std::runtime_error(std::string("launch: cannot find a free port: ") + std::strerror(saved));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string find_program(const std::string& name, const std::string& path_variable) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : std::string();
  size_t start = 0;
  for (;;) {
    const size_t end = path_variable.find(':', start);
    std::string dir = path_variable.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";  // an empty PATH entry is the current directory
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) return {};
    start = end + 1;
  }
}

Endpoint parse_endpoint(const std::string& text, int default_port) {
  const std::string what = "--rdzv-endpoint '" + text + "': expected HOST[:PORT] or [IPV6][:PORT]";
  Endpoint e;
  e.port = default_port;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close == 1) throw std::invalid_argument(what);
    e.host = text.substr(1, close - 1);
    const std::string rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') throw std::invalid_argument(what);
    port = rest.empty() ? "" : rest.substr(1);
    if (!rest.empty() && port.empty()) throw std::invalid_argument(what);
  } else {
    const auto colon = text.find(':');
    if (colon != std::string::npos && text.find(':', colon + 1) != std::string::npos)
      throw std::invalid_argument(what + " (an IPv6 address goes in brackets)");
    e.host = text.substr(0, colon);
    if (colon != std::string::npos) {
      port = text.substr(colon + 1);
      if (port.empty()) throw std::invalid_argument(what);
    }
  }
  if (e.host.empty() || e.host.find_first_of(" \t/") != std::string::npos) throw std::invalid_argument(what);
  if (!port.empty()) {
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) throw std::invalid_argument(what);
    e.port = std::stoi(port);
    if (e.port < 1 || e.port > 65535) throw std::invalid_argument(what + " (port 1 to 65535)");
  }
  return e;
}

std::string format_endpoint(const Endpoint& e) {
  const bool v6 = e.host.find(':') != std::string::npos;
  return (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port);
}

NodeCount parse_nnodes(const std::string& text) {
  NodeCount n;
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    n.min = n.max = parse_count(text, text);
    return n;
  }
  n.min = parse_count(text.substr(0, colon), text);
  n.max = parse_count(text.substr(colon + 1), text);
  if (n.min > n.max) throw std::invalid_argument("launch: --nnodes MIN:MAX needs MIN <= MAX, got '" + text + "'");
  n.elastic = true;
  return n;
}

std::vector<std::string> torchrun_argv(const std::string& torchrun, const ElasticRequest& r, const Program& program) {
  std::vector<std::string> argv{torchrun,
                                "--nnodes=" + std::to_string(r.nodes.min) + ":" + std::to_string(r.nodes.max),
                                "--nproc-per-node=" + std::to_string(r.nproc_per_node),
                                "--rdzv-backend=c10d",
                                "--rdzv-endpoint=" + r.rdzv_endpoint,
                                "--rdzv-id=" + r.run_id,
                                "--max-restarts=" + std::to_string(r.max_restarts),
                                "--no-python",
                                "--",  // what follows is the worker's, even a flag torchrun also takes
                                program.path};
  argv.insert(argv.end(), program.argv.begin() + (program.argv.empty() ? 0 : 1), program.argv.end());
  return argv;
}

namespace {

using Clock = std::chrono::steady_clock;

bool is_stop_signal(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP; }

// Everything the launcher writes, its own messages included, leaves through these: no stream that
// stops taking bytes can stall the loop that watches signals and workers.
struct LauncherOutput {
  OutputSink out{1, "stdout"};
  OutputSink err{2, "stderr"};

  void say(const std::string& line) { err.write_always("crosstrain launch: " + line + "\n"); }

  // Lets the streams take what is queued, as long as they need (as a program's own writes would),
  // until a stop signal comes; after a launch a signal stopped, for half a second each at most.
  // Returns the stop signal that ended the wait, or 0.
  int finish(SignalWatch& signals, bool stopped) {
    int stop = 0;
    auto drain = [&](OutputSink& sink) {
      const bool hurry = stopped || stop != 0;
      Clock::time_point give_up = hurry ? Clock::now() + std::chrono::milliseconds(500) : Clock::time_point::max();
      while (!sink.flush_until(std::min(give_up, Clock::now() + std::chrono::milliseconds(50)))) {
        for (int sig : signals.take())
          if (is_stop_signal(sig) && stop == 0) {
            stop = sig;
            give_up = Clock::now();
          }
        if (Clock::now() >= give_up) return;
      }
    };
    drain(out);
    for (OutputSink* sink : {&out, &err})
      if (sink->dropped_lines() > 0)
        say(std::to_string(sink->dropped_lines()) + " line(s) of the workers' " + sink->name() +
            " were dropped: it did not take them in time");
    if (out.pending_bytes() > 0) say("the rest of the workers' stdout was not written");
    drain(err);
    return stop;
  }
};

int run_attempts(LaunchRequest& request, LauncherOutput& output, SignalWatch& signals) {
  LaunchShape& shape = request.shape;
  auto say = [&](const std::string& line) { output.say(line); };
  if (shape.master_port == 0) {
    shape.master_port = pick_free_port();
    say("MASTER_PORT=" + std::to_string(shape.master_port) + " (a free port)");
  }
  Environment inherited = current_environment();
  for (const auto& [name, value] : request.extra_env) inherited[name] = value;
  if (sets_omp_threads(shape, inherited))
    say("OMP_NUM_THREADS=1 for each worker, since it is not set: tune it for your workload");

  GroupOptions options;
  options.prefix_output = request.prefix_output;
  options.out = &output.out;
  options.err = &output.err;
  options.kill_timeout_s = request.kill_timeout_s;
  options.note = say;
  for (int attempt = 0;; ++attempt) {
    std::vector<WorkerSpec> workers;
    for (int i = 0; i < shape.nproc_per_node; ++i) {
      WorkerSpec w;
      w.local_rank = i;
      w.rank = shape.node_rank * shape.nproc_per_node + i;
      w.env = environment_block(inherited, worker_environment(shape, i, attempt, inherited));
      workers.push_back(std::move(w));
    }
    const GroupResult result = run_worker_group(request.program, workers, options, signals);
    if (result.stop_signal != 0) {
      say("stopped by " + signal_name(result.stop_signal) + "; exiting with " + std::to_string(128 + result.stop_signal));
      return 128 + result.stop_signal;
    }
    if (!result.first_failure) return 0;
    const WorkerEnd& failure = *result.first_failure;
    const std::string what = "rank " + std::to_string(failure.rank) + " (local rank " +
                             std::to_string(failure.local_rank) + ") failed: " + failure.describe();
    if (attempt >= shape.max_restarts) {
      say(what + (shape.max_restarts > 0 ? " after " + std::to_string(attempt) + " restart(s)" : std::string()) +
          "; exiting with " + std::to_string(failure.status()));
      return failure.status();
    }
    // A stop signal that arrived while the group was ending: do not start again.
    for (int sig : signals.take())
      if (is_stop_signal(sig)) {
        say("stopped by " + signal_name(sig) + "; exiting with " + std::to_string(128 + sig));
        return 128 + sig;
      }
    say(what + "; restarting all " + std::to_string(shape.nproc_per_node) + " local workers (restart " +
        std::to_string(attempt + 1) + " of " + std::to_string(shape.max_restarts) + ")");
  }
}

}  // namespace

int run_launch(LaunchRequest request) {
  validate(request.shape);
  LauncherOutput output;
  SignalWatch signals;
  int status = 0;
  try {
    status = run_attempts(request, output, signals);
  } catch (...) {
    output.finish(signals, true);  // what the launcher said before it failed
    throw;
  }
  const bool stopped = status > 128 && is_stop_signal(status - 128);
  const int late_stop = output.finish(signals, stopped);
  return late_stop != 0 && !stopped ? 128 + late_stop : status;
}

}  // namespace crosstrain::launch
