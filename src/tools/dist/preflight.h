#pragma once
// The quick network checks of a worker before it waits on a rendezvous: each answers at once, so a
// rank whose MASTER_ADDR, route, *_SOCKET_IFNAME or multi-node addresses cannot work says so in
// seconds instead of at the end of a timeout. `doctor --distributed` lists them all; a process
// group (dist::Group::join) stops at the first problem, with the same line. Torch-free.
//
//   auto p = dist::preflight(env, {.interface_variables = {"GLOO_SOCKET_IFNAME"}, .gloo = true});
//   if (!p.ok()) throw std::runtime_error(p.first_problem());
#include <string>
#include <vector>

#include "tools/dist/net_check.h"
#include "tools/dist/worker_env.h"

namespace crosstrain::dist {

struct NetFinding {
  enum class Status { Ok, Info, Problem };
  std::string name;   // "MASTER_ADDR", "GLOO_SOCKET_IFNAME", ...
  std::string value;  // what was found, a sentence
  std::string hint;   // the fix, for a problem
  Status status = Status::Ok;
};

struct PreflightOptions {
  // The *_SOCKET_IFNAME variables to check (those set): the backend's, or all of them.
  std::vector<std::string> interface_variables = {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME"};
  bool gloo = true;  // Gloo gives its peers an address: check it on a job of several nodes
  // Also what only usually fails: rank 0 (hosting the store) whose MASTER_ADDR is not its own, a
  // taken MASTER_PORT, a *_SOCKET_IFNAME off MASTER_ADDR's network. A process group leaves these
  // to what follows, which may still work (a service address that leads back to this host; a
  // data network apart from the one MASTER_ADDR is on) and checks the addresses the ranks give
  // each other once it knows them (unreachable_peer_address).
  bool strict = false;
};

struct Preflight {
  std::vector<NetFinding> findings;
  std::string master_address;  // MASTER_ADDR resolved (numeric); empty when it does not resolve
  Route route;                 // how this host reaches it
  std::vector<InterfaceAddress> interfaces;

  bool ok() const;
  // "GLOO_SOCKET_IFNAME=eth9: no interface 'eth9' on this host (eth0, lo); fix: name an interface ..."
  std::string first_problem() const;
  std::string problems() const;  // every problem, "; " between them
};

Preflight preflight(const WorkerEnv& env, const PreflightOptions& options);

// The *_SOCKET_IFNAME variable a backend reads ("gloo" -> GLOO_SOCKET_IFNAME), empty for others.
std::string interface_variable_of(const std::string& backend);

// Why a rendezvous store at address:port could not be used, from a direct connection attempt
// (nothing listening, no answer, no route, or a port that accepts but no store answered there, with
// the process that holds the port when it is on this host).
std::string diagnose_store(const std::string& address, int port);

// The address a backend gives its peers, picked as the backend picks it. Gloo: the first address
// of GLOO_SOCKET_IFNAME's interface, else this host's name resolved when that is an address of
// this host, else the loopback. Empty for backends that pick it themselves (NCCL, HCCL).
struct AdvertisedAddress {
  std::string address;
  std::string source;  // "GLOO_SOCKET_IFNAME=eth1", "host name 'node1'", ...
};
AdvertisedAddress advertised_address(const std::string& backend);

// Why a process here could not connect to `address`, the address a rank on another network stack
// gives its peers: a loopback address, an address this host has too (the connection would stay
// here), or no route. Empty when nothing says so short of connecting.
std::string unreachable_peer_address(const std::string& address);

// "python3 (pid 4242)": the process of this host (in this pid namespace) that listens on `port`,
// empty when there is none or it cannot be seen.
std::string port_holder(int port);

// What tells two processes apart as machines: the kernel's boot id and the pid namespace. Two
// processes with the same identity see each other's pids; two hosts with one host name do not
// share it. Empty when it cannot be read.
std::string node_identity();
// The same for the network: boot id and network namespace. Processes with different ones reach
// each other only through their interfaces.
std::string network_identity();

}  // namespace crosstrain::dist
