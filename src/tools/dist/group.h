#pragma once
// A data-parallel process group on c10d: the rendezvous store, the backend for the device, and the
// table of peers that failure messages name.
//
//   auto group = dist::Group::join(env, device, {.backend = "auto", .timeout = 300s});
//   group->all_reduce_sum(values, "loss of step 12");  // any failure: one message, then exit 1
//
// Store: rank 0 hosts a TCPStore at MASTER_ADDR:MASTER_PORT and the others connect (torch's env://
// rendezvous); under torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE) every rank is a client
// and keys live under the restart attempt. Backends: Gloo on the CPU; NCCL for CUDA when this build
// has it; on a PrivateUse1 device the backend a loaded backend library registered (hccl).
//
// Before the rendezvous, the quick network checks of dist/preflight.h: a MASTER_ADDR, route or
// *_SOCKET_IFNAME that cannot work fails in seconds with the line `doctor --distributed` prints, and
// the rank tells the others through the store (announce_failure), so they stop waiting and name it.
// Once the ranks know each other, each checks the address every rank on another network stack
// gives its peers (with Gloo) before the backend connects them; one that cannot be reached stops
// every rank the same way.
// The rendezvous (store, every rank joining, the backend's connections) is bounded by the timeout
// even where c10d blocks without one (RendezvousDeadline); its errors are one line with the cause.
//
// Failures never hang and never unwind through c10d: every collective has the group's timeout, and
// a failed one prints what it was doing, which peers are gone or stopped (probed by pid when they
// run on this machine: same boot id and pid namespace) and exits with kFailureExit at once.
// Destroying a group whose peers are dead can block in c10d's destructors; exiting cannot.
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <c10/util/intrusive_ptr.h>

#include "core/device.h"
#include "tools/dist/worker_env.h"

namespace c10d {
class ProcessGroup;
class Store;
}  // namespace c10d

namespace crosstrain::dist {

class RendezvousDeadline;
constexpr int kFailureExit = 1;

struct GroupOptions {
  std::string backend = "auto";                  // auto | gloo | nccl | <PrivateUse1 backend, e.g. hccl>
  std::chrono::milliseconds timeout{300'000};    // every collective and the rendezvous
  bool preflight = true;                         // the network checks of dist/preflight.h first
};

struct Peer {
  int rank = 0;
  std::string host;
  int64_t pid = 0;
  std::string device;
  std::string node;  // dist::node_identity(): the pid is meaningful where this matches
  std::string net;   // dist::network_identity()
  std::string address, address_source;  // what its backend gives the others (dist::advertised_address)
};

// Another rank announced, before the rendezvous, that it will not join (Group::announce_failure).
class PeerFailure : public std::runtime_error {
 public:
  PeerFailure(int rank, std::string host, std::string reason);
  int rank() const { return rank_; }
  const std::string& host() const { return host_; }
  const std::string& reason() const { return reason_; }  // what stopped it, one line

 private:
  int rank_;
  std::string host_, reason_;
};

class Group {
 public:
  // Rendezvous and backend creation. std::runtime_error with what to check when it cannot be made
  // (PeerFailure when another rank announced it will not come).
  static std::unique_ptr<Group> join(const WorkerEnv& env, const core::DeviceContext& device, const GroupOptions& options);
  // Tells the ranks waiting in join() that this one will not join, and why (one line), through the
  // store at MASTER_ADDR:MASTER_PORT; false when the store could not be reached within `timeout`.
  // Rank 0 hosting the store cannot (its store would end with it).
  static bool announce_failure(const WorkerEnv& env, const std::string& reason, std::chrono::milliseconds timeout);
  ~Group();

  int rank() const { return env_.rank; }
  int size() const { return env_.world_size; }
  const WorkerEnv& env() const { return env_; }
  const std::vector<Peer>& peers() const { return peers_; }
  const std::string& backend_name() const { return backend_; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  const c10::intrusive_ptr<c10d::ProcessGroup>& process_group() const { return pg_; }
  c10d::Store& store() { return *store_; }

  // Collectives on tensors of the group's device. `what` names the collective in failure messages.
  void all_reduce_sum(at::Tensor& t, const std::string& what);
  void broadcast(std::vector<at::Tensor>& tensors, int root, const std::string& what);
  void barrier(const std::string& what);
  // Rank 0's string, on every rank (through the store).
  std::string share_from_rank0(const std::string& key, const std::string& value_on_rank0);

  // Runs `op`; any exception becomes fail(what, ...).
  template <class F>
  void guarded(const std::string& what, F&& op) {
    try {
      op();
    } catch (const std::exception& e) {
      fail(what, e.what());
    }
  }
  // Prints "rank R: <what> failed: <error>; <which peers are gone>" and exits with kFailureExit.
  [[noreturn]] void fail(const std::string& what, const std::string& error) const;
  // The peers that are gone or stopped, as far as this host can tell ("" when it cannot).
  std::string diagnose_peers() const;

 private:
  Group(WorkerEnv env, GroupOptions options);
  void check_network() const;
  void exchange_peers(const core::DeviceContext& device, std::chrono::steady_clock::time_point deadline,
                      const RendezvousDeadline& watchdog);
  void check_peer_addresses(std::chrono::steady_clock::time_point deadline);
  void wait_for_all(const std::string& counter, std::chrono::steady_clock::time_point deadline);
  void tell_failure(const std::string& problem);
  [[noreturn]] void stuck(const std::string& step) const;

  WorkerEnv env_;
  GroupOptions options_;
  std::string backend_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  std::vector<Peer> peers_;
  std::string host_;
  std::string node_;            // node_identity()
  std::string net_;             // network_identity()
  std::string master_address_;  // MASTER_ADDR resolved, for messages
};

}  // namespace crosstrain::dist
