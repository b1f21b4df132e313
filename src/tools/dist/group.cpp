#include "tools/dist/group.h"

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <c10/util/Logging.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "tools/dist/npu/npu_plugin.h"
#include "tools/dist/gloo_backend.h"
#include "tools/dist/nccl_backend.h"
#include "tools/dist/net_check.h"
#include "tools/dist/preflight.h"
#include "tools/dist/rendezvous_deadline.h"

namespace crosstrain::dist {

namespace {

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  if (line.size() > 400) line = line.substr(0, 400) + "...";
  return line;
}

std::string this_host() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

std::string seconds(std::chrono::milliseconds ms) {
  std::ostringstream s;
  s << static_cast<double>(ms.count()) / 1000.0 << " s";
  return s.str();
}

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

// 'R', 'S', 'T' (stopped), 'Z' (zombie) ... from /proc/PID/stat; 0 when the process does not exist.
char process_state(int64_t pid) {
  if (pid <= 0) return '?';
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kDeadlineMargin{2000};
// How long a rank that will not join waits for rank 0's store to tell it, before it reports and
// exits (the ranks of one job start within moments of each other).
constexpr std::chrono::milliseconds kAnnounceLimit{5000};

std::chrono::milliseconds until(Clock::time_point t) {
  return std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()));
}

// c10d logs each failed connection attempt, with a C++ stack, before it throws; the errors made
// from what it throws say what went wrong instead.
class QuietC10dLogs {
 public:
  QuietC10dLogs() : saved_(FLAGS_caffe2_log_level) { FLAGS_caffe2_log_level = 3; }
  ~QuietC10dLogs() { FLAGS_caffe2_log_level = saved_; }
  QuietC10dLogs(const QuietC10dLogs&) = delete;
  QuietC10dLogs& operator=(const QuietC10dLogs&) = delete;

 private:
  int saved_;
};

c10::intrusive_ptr<c10d::Store> tcp_store(const WorkerEnv& env, bool server, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(env.master_port);
  o.isServer = server;
  o.numWorkers = env.world_size;
  o.waitWorkers = false;  // the peer exchange waits, and says who is missing
  o.timeout = timeout;
  o.multiTenant = true;
  return c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
}

// The store's key space of this job and attempt.
c10::intrusive_ptr<c10d::Store> job_keys(const WorkerEnv& env, c10::intrusive_ptr<c10d::Store> store) {
  if (env.use_agent_store)  // torchrun's agent store outlives restarts: one key space per attempt
    store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restart_count), store);
  return c10::make_intrusive<c10d::PrefixStore>("crosstrain/", store);
}

// Why rank 0 could not host the store: the port (and who holds it) when it is taken; otherwise
// the store started and rank 0 could not reach it at MASTER_ADDR.
std::string hosting_failure(const WorkerEnv& env, const std::string& master, const std::string& error) {
  const std::string port = std::to_string(env.master_port);
  const std::string busy = port_unavailable(env.master_port);
  if (!busy.empty()) {
    const std::string holder = port_holder(env.master_port);
    return "rank 0 cannot host the rendezvous store on port " + port + ": " + busy +
           (holder.empty() ? "" : " (held by " + holder + ")") + "; choose another MASTER_PORT / --master-port";
  }
  const std::string where = env.master_addr + ":" + port;
  if (!master.empty() && !is_local_address(master, local_interfaces()))
    return "rank 0 hosts the rendezvous store on port " + port + ", but MASTER_ADDR " + env.master_addr +
           (master == env.master_addr ? "" : " (" + master + ")") +
           " is not an address of this host, and connecting to it failed (" + error +
           "); set MASTER_ADDR to rank 0's address on every rank";
  return "rank 0 cannot reach its own rendezvous store at " + where + ": " + error;
}

c10::intrusive_ptr<c10d::Store> connect_store(const WorkerEnv& env, const std::string& master,
                                              std::chrono::milliseconds timeout) {
  const bool server = !env.use_agent_store && env.rank == 0;
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  try {
    return job_keys(env, tcp_store(env, server, timeout));
  } catch (const std::exception& e) {
    const std::string error = first_line(e.what());
    if (server) throw std::runtime_error(hosting_failure(env, master, error));
    // Also when the deadline cut a connection that never answered: the probe says what is there.
    throw std::runtime_error("cannot reach the rendezvous store at " + where + " within " + seconds(timeout) + ": " +
                             (master.empty() ? error : diagnose_store(master, env.master_port)));
  }
}

std::string resolve_backend(const std::string& asked, const core::DeviceContext& device) {
  if (asked != "auto") return asked;
  if (device.is_cpu()) return "gloo";
  if (device.is_cuda()) return "nccl";
  if (device.device().type() == c10::DeviceType::PrivateUse1) return "hccl";
  return "gloo";
}

// torch_npu's HCCL backend, through crosstrain's NPU plugin (loaded with --backend-lib).
const CrosstrainNpuApi* npu_api() {
  using ApiFn = const CrosstrainNpuApi* (*)();
  auto fn = reinterpret_cast<ApiFn>(dlsym(RTLD_DEFAULT, "crosstrain_npu_api"));
  if (!fn)
    throw std::runtime_error(
        "the hccl backend needs torch_npu and crosstrain's NPU plugin loaded: --backend-lib libtorch_npu.so "
        "--backend-lib libcrosstrain_npu.so (docs/ASCEND.md)");
  const CrosstrainNpuApi* api = fn();
  if (!api || api->abi_version != kCrosstrainNpuAbi) throw std::runtime_error("the NPU plugin has another ABI version");
  return api;
}

c10::intrusive_ptr<c10d::Backend> make_hccl(const CrosstrainNpuApi& api, const c10::intrusive_ptr<c10d::Store>& store,
                                            const WorkerEnv& env, std::chrono::milliseconds timeout) {
  auto prefixed = c10::intrusive_ptr<c10d::Store>(c10::make_intrusive<c10d::PrefixStore>("hccl/", store));
  c10::intrusive_ptr<c10d::Backend> backend;
  if (api.make_hccl_backend(&prefixed, env.rank, env.world_size, timeout.count(), &backend) != 0)
    throw std::runtime_error(api.error_message());
  return backend;
}

}  // namespace

PeerFailure::PeerFailure(int rank, std::string host, std::string reason)
    : std::runtime_error("rank " + std::to_string(rank) + " on " + host + " stopped before the rendezvous: " + reason),
      rank_(rank),
      host_(std::move(host)),
      reason_(std::move(reason)) {}

std::unique_ptr<Group> Group::join(const WorkerEnv& env, const core::DeviceContext& device, const GroupOptions& options) {
  std::unique_ptr<Group> g(new Group(env, options));
  g->host_ = this_host();
  g->node_ = node_identity();
  g->net_ = network_identity();
  g->backend_ = resolve_backend(options.backend, device);
  const auto type = device.device().type();
  const CrosstrainNpuApi* npu = nullptr;
  if (g->backend_ == "nccl" && !device.is_cuda())
    throw std::runtime_error("--dist-backend nccl needs a CUDA device (--device cuda); on " + device.name() + " use gloo");
  if (g->backend_ == "nccl" && !nccl_available())
    throw std::runtime_error("this build of crosstrain has no NCCL process group; use --dist-backend gloo");
  if (g->backend_ != "gloo" && g->backend_ != "nccl") {
    if (type != c10::DeviceType::PrivateUse1)
      throw std::runtime_error("--dist-backend " + g->backend_ + " does not run on " + device.name() +
                               " (gloo on the CPU, nccl on CUDA, hccl on Ascend NPUs)");
    npu = npu_api();
  }
  g->master_address_ = resolve_host(env.master_addr).address;
  if (options.preflight) g->check_network();

  const QuietC10dLogs quiet;
  const Group& self = *g;
  RendezvousDeadline deadline(env.master_port, [&self](const std::string& step) { self.stuck(step); });
  const auto start = Clock::now();
  // Each step's own timeout first; the deadline a moment later catches what has none.
  deadline.arm("connecting to the rendezvous store at " + env.master_addr + ":" + std::to_string(env.master_port),
               options.timeout + kDeadlineMargin);
  g->store_ = connect_store(env, g->master_address_, options.timeout);
  deadline.arm("waiting for every rank to join", until(start + options.timeout) + kDeadlineMargin);
  g->exchange_peers(device, start + options.timeout, deadline);
  g->pg_ = c10::make_intrusive<c10d::ProcessGroup>(g->store_, env.rank, env.world_size);
  using BT = c10d::ProcessGroup::BackendType;
  deadline.arm("creating the " + g->backend_ + " process group (every rank connecting to the others)",
               options.timeout + kDeadlineMargin);
  g->guarded("creating the " + g->backend_ + " process group", [&] {
    if (npu) {
      g->pg_->setDefaultBackend(BT::CUSTOM);
      g->pg_->setBackend(type, BT::CUSTOM, make_hccl(*npu, g->store_, env, options.timeout));
      return;
    }
    if (g->backend_ == "nccl") {
      g->pg_->setDefaultBackend(BT::NCCL);
      g->pg_->setBackend(type, BT::NCCL, make_nccl_backend(g->store_, env.rank, env.world_size, options.timeout));
      // CPU tensors (the loss and evaluation sums travel on the device; nothing else) would need Gloo.
      return;
    }
    auto b = make_gloo_backend(g->store_, env.rank, env.world_size, options.timeout);
    g->pg_->setDefaultBackend(BT::GLOO);
    g->pg_->setBackend(c10::DeviceType::CPU, BT::GLOO, b);
    if (type != c10::DeviceType::CPU) g->pg_->setBackend(type, BT::GLOO, b);
  });
  deadline.disarm();
  return g;
}

Group::Group(WorkerEnv env, GroupOptions options) : env_(std::move(env)), options_(std::move(options)) {}

Group::~Group() = default;

// The doctor's quick checks for this backend; a problem fails here, in seconds, after telling the
// other ranks (they would otherwise wait for this one until the timeout).
void Group::check_network() const {
  PreflightOptions o;
  o.interface_variables.clear();
  if (const std::string var = interface_variable_of(backend_); !var.empty()) o.interface_variables.push_back(var);
  o.gloo = backend_ == "gloo";
  const Preflight p = preflight(env_, o);
  if (p.ok()) return;
  if (!p.master_address.empty() && p.route.error.empty())
    announce_failure(env_, p.first_problem(), std::min(options_.timeout, kAnnounceLimit));
  throw std::runtime_error("rank " + std::to_string(env_.rank) + " on " + host_ + ": " + p.first_problem());
}

bool Group::announce_failure(const WorkerEnv& env, const std::string& reason, std::chrono::milliseconds timeout) {
  if (!env.use_agent_store && env.rank == 0) return false;
  const std::string line = reason.substr(0, std::min(reason.find('\n'), size_t{2000}));
  const std::string address = resolve_host(env.master_addr).address;
  if (address.empty()) return false;
  // Only to a store that is there, or about to be (rank 0 still starting: connection refused);
  // c10d's own connection retries would overrun the limit.
  const auto give_up = Clock::now() + timeout;
  for (;;) {
    const auto reach = probe_tcp(address, env.master_port, std::chrono::milliseconds(1000)).result;
    if (reach == Reachability::Accepts) break;
    if (reach != Reachability::Refused || Clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const QuietC10dLogs quiet;
  const std::chrono::milliseconds limit(3000);
  try {
    RendezvousDeadline deadline(env.master_port, [](const std::string&) {}, std::chrono::hours(24));
    deadline.arm("telling rank 0", limit);
    auto store = job_keys(env, tcp_store(env, false, limit));
    store->set("failed/" + std::to_string(env.rank), bytes(this_host() + "\t" + line));
    store->add("failed", 1);
    deadline.disarm();
    return true;
  } catch (const std::exception&) {
    return false;  // nobody to tell: the caller reports its own failure anyway
  }
}

// Every rank publishes itself and waits for all the others (or for one that announced it will not
// come), then checks the addresses the others' backend will connect to.
void Group::exchange_peers(const core::DeviceContext& device, Clock::time_point deadline,
                           const RendezvousDeadline& watchdog) {
  const AdvertisedAddress advertised = advertised_address(backend_);
  const std::string mine = host_ + "\t" + std::to_string(getpid()) + "\t" + device.name() + "\t" +
                           std::to_string(env_.world_size) + "\t" + node_ + "\t" + net_ + "\t" + advertised.address +
                           "\t" + advertised.source;
  try {
    const int64_t joined = store_->add("joined/" + std::to_string(env_.rank), 1);
    if (joined > 1)
      throw std::runtime_error("two workers have RANK=" + std::to_string(env_.rank) +
                               ": every worker needs its own rank in [0, WORLD_SIZE)");
    store_->set("peer/" + std::to_string(env_.rank), bytes(mine));
    store_->add("present", 1);
    wait_for_all("present", deadline);
    peers_.clear();
    for (int r = 0; r < env_.world_size; ++r) {
      const std::string key = "peer/" + std::to_string(r);
      if (!store_->check({key}))  // the count was reached with ranks of another job size
        throw std::runtime_error("rank " + std::to_string(r) + " did not join, but other ranks with another WORLD_SIZE " +
                                 "did: every worker must be started with the same world size");
      std::istringstream in(text(store_->get(key)));
      Peer p;
      p.rank = r;
      std::string pid, world;
      for (std::string* field : {&p.host, &pid, &p.device, &world, &p.node, &p.net, &p.address, &p.address_source})
        std::getline(in, *field, '\t');
      p.pid = std::atoll(pid.c_str());
      if (world != std::to_string(env_.world_size))
        throw std::runtime_error("rank " + std::to_string(r) + " on " + p.host + " has WORLD_SIZE=" + world +
                                 ", this rank (" + std::to_string(env_.rank) + ") has " +
                                 std::to_string(env_.world_size) + ": every worker must be started with the same world size");
      peers_.push_back(p);
    }
    check_peer_addresses(deadline);
  } catch (const c10::Error& e) {
    const std::string where = env_.master_addr + ":" + std::to_string(env_.master_port);
    if (watchdog.expired())
      throw std::runtime_error("the rendezvous store at " + where + " did not answer within " + seconds(options_.timeout) +
                               ": " + diagnose_store(master_address_, env_.master_port));
    throw std::runtime_error("the rendezvous store at " + where + " failed while the ranks joined: " +
                             first_line(e.what_without_backtrace()) +
                             (env_.rank == 0 ? "" : " (rank 0 stopped? its output says why)"));
  }
}

// Before the backend connects the ranks to one another: the address each rank on another network
// stack gives its peers must be one this host can reach (not a loopback address, not one of this
// host's own, a route to it). A rank that finds one that is not tells the others, and all stop.
void Group::check_peer_addresses(Clock::time_point deadline) {
  for (const auto& p : peers_) {
    if (p.rank == env_.rank || p.address.empty() || p.net.empty() || p.net == net_) continue;
    const std::string why = unreachable_peer_address(p.address);
    if (why.empty()) continue;
    const std::string problem = "rank " + std::to_string(p.rank) + " on " + p.host + " gives its peers " + p.address +
                                " (" + p.address_source + "), " + why +
                                "; fix: set GLOO_SOCKET_IFNAME on every node to the interface on the network between "
                                "the nodes";
    tell_failure(problem);
    throw std::runtime_error("rank " + std::to_string(env_.rank) + " on " + host_ + ": " + problem);
  }
  store_->add("checked", 1);
  wait_for_all("checked", deadline);
}

// Posts this rank's failure for the others. The rank that hosts the store keeps it up until every
// rank has read a failure (or failed itself), a few seconds at most: the store ends with it.
void Group::tell_failure(const std::string& problem) {
  try {
    store_->set("failed/" + std::to_string(env_.rank), bytes(host_ + "\t" + problem));
    store_->add("failed", 1);
    if (env_.use_agent_store || env_.rank != 0) return;
    const auto until = Clock::now() + std::chrono::seconds(5);
    while (store_->add("failed", 0) + store_->add("seen", 0) < env_.world_size && Clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } catch (const std::exception&) {
  }
}

// Polls `counter` until every rank has added to it, a rank announced a failure (PeerFailure), or
// `deadline` (naming the ranks missing): two small requests per rank and period.
void Group::wait_for_all(const std::string& counter, Clock::time_point deadline) {
  auto period = std::chrono::milliseconds(10);
  while (store_->add(counter, 0) < env_.world_size) {
    if (store_->add("failed", 0) > 0)
      for (int r = 0; r < env_.world_size; ++r)
        if (store_->check({"failed/" + std::to_string(r)})) {
          const std::string said = text(store_->get("failed/" + std::to_string(r)));
          const size_t tab = said.find('\t');
          store_->add("seen", 1);
          throw PeerFailure(r, said.substr(0, tab), tab == std::string::npos ? said : said.substr(tab + 1));
        }
    if (Clock::now() >= deadline) {
      std::string list;
      for (int r = 0; r < env_.world_size; ++r)
        if (!store_->check({"peer/" + std::to_string(r)})) list += (list.empty() ? "" : ", ") + std::to_string(r);
      throw std::runtime_error((list.empty() ? std::string("not every rank") : "rank(s) " + list) + " did not join within " +
                               seconds(options_.timeout) + " (WORLD_SIZE=" + std::to_string(env_.world_size) +
                               "): were all workers started, with the same MASTER_ADDR and MASTER_PORT?");
    }
    std::this_thread::sleep_for(std::min(period, until(deadline)));
    period = std::min(period * 2, std::chrono::milliseconds(200));
  }
}

void Group::stuck(const std::string& step) const {
  const bool store_step = step.rfind("creating", 0) != 0;
  std::string msg = "error: rank " + std::to_string(env_.rank) + " on " + host_ + ": " + step + " did not end within " +
                    seconds(options_.timeout) + " (--dist-timeout)";
  if (store_step && !master_address_.empty()) msg += ": " + diagnose_store(master_address_, env_.master_port);
  if (!store_step)
    msg += ": the ranks could not connect to one another at the addresses the backend gave them; check "
           "*_SOCKET_IFNAME and each host's name with `crosstrain doctor --distributed` on every node";
  msg += "\n";
  std::fflush(stdout);
  std::cout.flush();
  std::fputs(msg.c_str(), stderr);
  std::fflush(stderr);
  std::_Exit(kFailureExit);
}

std::string Group::diagnose_peers() const {
  std::string out, remote;
  for (const auto& p : peers_) {
    if (p.rank == env_.rank) continue;
    const std::string who = "rank " + std::to_string(p.rank) + " (" + p.host + ", pid " + std::to_string(p.pid) + ")";
    if (p.node.empty() || p.node != node_) {  // another machine or pid namespace: its pid means nothing here
      remote += (remote.empty() ? "" : ", ") + std::to_string(p.rank);
      continue;
    }
    const char state = process_state(p.pid);
    if (state == 0 || state == 'Z' || state == 'X') out += (out.empty() ? "" : "; ") + who + " has exited";
    else if (state == 'T' || state == 't') out += (out.empty() ? "" : "; ") + who + " is stopped";
  }
  if (out.empty() && !remote.empty()) out = "ranks on other machines (" + remote + ") cannot be checked from here";
  return out;
}

void Group::fail(const std::string& what, const std::string& error) const {
  std::string msg = "error: rank " + std::to_string(env_.rank) + " on " + host_ + ": " + what + " failed: " + first_line(error);
  // A dead peer's sockets close while it is still exiting: give its state a moment to show.
  std::string peers = diagnose_peers();
  for (int i = 0; i < 20 && (peers.empty() || peers.find("cannot be checked") != std::string::npos); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    peers = diagnose_peers();
  }
  if (!peers.empty()) msg += "\n  " + peers;
  msg += "\n  (collective timeout --dist-timeout " + seconds(options_.timeout) + ")\n";
  std::fflush(stdout);
  std::cout.flush();
  std::fputs(msg.c_str(), stderr);
  std::fflush(stderr);
  std::_Exit(kFailureExit);
}

void Group::all_reduce_sum(at::Tensor& t, const std::string& what) {
  guarded(what, [&] {
    std::vector<at::Tensor> v{t};
    pg_->allreduce(v)->wait(options_.timeout);
  });
}

void Group::broadcast(std::vector<at::Tensor>& tensors, int root, const std::string& what) {
  guarded(what, [&] {
    c10d::BroadcastOptions o;
    o.rootRank = root;
    pg_->broadcast(tensors, o)->wait(options_.timeout);
  });
}

void Group::barrier(const std::string& what) {
  guarded(what, [&] { pg_->barrier()->wait(options_.timeout); });
}

std::string Group::share_from_rank0(const std::string& key, const std::string& value) {
  std::string out;
  guarded("sharing '" + key + "' from rank 0", [&] {
    if (env_.rank == 0) store_->set("share/" + key, bytes(value));
    out = env_.rank == 0 ? value : text(store_->get("share/" + key));
  });
  return out;
}

}  // namespace crosstrain::dist
