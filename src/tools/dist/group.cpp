#include "tools/dist/group.h"

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "tools/ascend/npu/npu_plugin.h"
#include "tools/dist/gloo_backend.h"
#include "tools/dist/nccl_backend.h"

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

c10::intrusive_ptr<c10d::Store> connect_store(const WorkerEnv& env, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(env.master_port);
  o.isServer = !env.use_agent_store && env.rank == 0;
  o.numWorkers = env.world_size;
  o.waitWorkers = false;  // the peer exchange below waits, and says who is missing
  o.timeout = timeout;
  o.multiTenant = true;
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
  } catch (const std::exception& e) {
    if (o.isServer)
      throw std::runtime_error("rank 0 cannot host the rendezvous store on " + where + ": " + first_line(e.what()) +
                               " (is the port in use? choose another MASTER_PORT / --master-port)");
    throw std::runtime_error("cannot reach the rendezvous store at " + where + " within " + seconds(timeout) + ": " +
                             first_line(e.what()) +
                             " (check MASTER_ADDR and MASTER_PORT, that rank 0 is running, and the firewall; "
                             "`crosstrain doctor --distributed` checks the connection)");
  }
  if (env.use_agent_store)  // torchrun's agent store outlives restarts: one key space per attempt
    store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restart_count), store);
  return c10::make_intrusive<c10d::PrefixStore>("crosstrain/", store);
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

std::unique_ptr<Group> Group::join(const WorkerEnv& env, const core::DeviceContext& device, const GroupOptions& options) {
  std::unique_ptr<Group> g(new Group(env, options));
  g->host_ = this_host();
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
  g->store_ = connect_store(env, options.timeout);
  g->exchange_peers(device);
  g->pg_ = c10::make_intrusive<c10d::ProcessGroup>(g->store_, env.rank, env.world_size);
  using BT = c10d::ProcessGroup::BackendType;
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
  return g;
}

Group::Group(WorkerEnv env, GroupOptions options) : env_(std::move(env)), options_(std::move(options)) {}

Group::~Group() = default;

void Group::exchange_peers(const core::DeviceContext& device) {
  const std::string mine = host_ + "\t" + std::to_string(getpid()) + "\t" + device.name() + "\t" +
                           std::to_string(env_.world_size);
  const int64_t joined = store_->add("joined/" + std::to_string(env_.rank), 1);
  if (joined > 1)
    throw std::runtime_error("two workers have RANK=" + std::to_string(env_.rank) +
                             ": every worker needs its own rank in [0, WORLD_SIZE)");
  store_->set("peer/" + std::to_string(env_.rank), bytes(mine));
  std::vector<std::string> keys;
  for (int r = 0; r < env_.world_size; ++r) keys.push_back("peer/" + std::to_string(r));
  try {
    store_->wait(keys, options_.timeout);
  } catch (const std::exception&) {
    std::string list;
    for (int r = 0; r < env_.world_size; ++r)
      if (!store_->check({keys[static_cast<size_t>(r)]})) list += (list.empty() ? "" : ", ") + std::to_string(r);
    throw std::runtime_error("rank(s) " + list + " did not join within " + seconds(options_.timeout) + " (WORLD_SIZE=" +
                             std::to_string(env_.world_size) +
                             "): were all workers started, with the same MASTER_ADDR and MASTER_PORT?");
  }
  peers_.clear();
  for (int r = 0; r < env_.world_size; ++r) {
    std::istringstream in(text(store_->get(keys[static_cast<size_t>(r)])));
    Peer p;
    p.rank = r;
    std::string pid, world;
    std::getline(in, p.host, '\t');
    std::getline(in, pid, '\t');
    std::getline(in, p.device, '\t');
    std::getline(in, world, '\t');
    p.pid = std::atoll(pid.c_str());
    if (world != std::to_string(env_.world_size))
      throw std::runtime_error("rank " + std::to_string(r) + " on " + p.host + " has WORLD_SIZE=" + world + ", this rank (" +
                               std::to_string(env_.rank) + ") has " + std::to_string(env_.world_size) +
                               ": every worker must be started with the same world size");
    peers_.push_back(p);
  }
}

std::string Group::diagnose_peers() const {
  std::string out, remote;
  for (const auto& p : peers_) {
    if (p.rank == env_.rank) continue;
    const std::string who = "rank " + std::to_string(p.rank) + " (" + p.host + ", pid " + std::to_string(p.pid) + ")";
    if (p.host != host_) {
      remote += (remote.empty() ? "" : ", ") + std::to_string(p.rank);
      continue;
    }
    const char state = process_state(p.pid);
    if (state == 0 || state == 'Z' || state == 'X') out += (out.empty() ? "" : "; ") + who + " has exited";
    else if (state == 'T' || state == 't') out += (out.empty() ? "" : "; ") + who + " is stopped";
  }
  if (out.empty() && !remote.empty()) out = "ranks on other hosts (" + remote + ") cannot be checked from here";
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
