#include "tools/dist/preflight.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace crosstrain::dist {

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? buf : "?";
}

struct Findings {
  std::vector<NetFinding>& list;
  void ok(std::string name, std::string value) { list.push_back({std::move(name), std::move(value), "", NetFinding::Status::Ok}); }
  void info(std::string name, std::string value) {
    list.push_back({std::move(name), std::move(value), "", NetFinding::Status::Info});
  }
  void problem(std::string name, std::string value, std::string hint) {
    list.push_back({std::move(name), std::move(value), std::move(hint), NetFinding::Status::Problem});
  }
};

int node_count(const WorkerEnv& env) { return (env.world_size + env.local_world_size - 1) / env.local_world_size; }

bool is_loopback(const std::string& address, const std::vector<InterfaceAddress>& ifs) {
  return address.rfind("127.", 0) == 0 || address == "::1" ||
         std::any_of(ifs.begin(), ifs.end(), [&](const InterfaceAddress& i) { return i.address == address && i.loopback; });
}

// Every interface a *_SOCKET_IFNAME names exists and has an address; strictly, it is also on
// MASTER_ADDR's network: the kernel routes MASTER_ADDR through it or MASTER_ADDR is on its subnet.
// Only a job on one node may use any interface of this host when MASTER_ADDR is its own.
void check_interface_variable(Findings& f, const std::string& var, const WorkerEnv& env, const std::string& master,
                              const Route& route, const std::vector<InterfaceAddress>& ifs, bool strict) {
  const char* value = std::getenv(var.c_str());
  if (!value || !*value) return;
  const auto names = interface_names();
  const auto sel = parse_interface_selection(var, value);
  const std::string what = var + "=" + value;
  if (sel.exclude) {
    f.info(var, what + " (interfaces to avoid)");
    return;
  }
  std::vector<std::string> picked;
  for (const auto& entry : sel.names) {
    const auto m = interfaces_matching(sel, entry, names);
    if (m.empty()) {
      f.problem(var, what + ": no interface " + (sel.exact ? "" : "starting with ") + "'" + entry + "' on this host (" +
                         join(names) + ")",
                "name an interface of `ip link` (on every node), or unset " + var);
      return;
    }
    picked.insert(picked.end(), m.begin(), m.end());
  }
  std::vector<std::string> with_address, without;
  for (const auto& name : picked) {
    const bool has = std::any_of(ifs.begin(), ifs.end(), [&](const InterfaceAddress& a) { return a.name == name; });
    (has ? with_address : without).push_back(name);
  }
  if (with_address.empty()) {
    f.problem(var, what + ": " + join(without) + " has no IP address (down or unconfigured)",
              "bring the interface up or name another one");
    return;
  }
  const bool one_node = node_count(env) == 1;
  const bool reaches = std::any_of(with_address.begin(), with_address.end(), [&](const std::string& n) {
    return n == route.interface || on_link(master, n, ifs);
  }) || (one_node && is_local_address(master, ifs));
  if (!reaches && strict) {
    const std::string via = route.interface.empty() ? "" : route.interface;
    const std::string why =
        is_local_address(master, ifs)
            ? " is not on the network of MASTER_ADDR " + master + " (this host's address" + (via.empty() ? "" : ", on " + via) + ")"
            : " has no route to MASTER_ADDR " + master +
                  (via.empty() ? " (this host has none)" : " (the kernel reaches it through " + via + ")");
    f.problem(var, what + ": " + join(with_address) + why + ", so the other ranks could not reach the address it gives them",
              "name the interface on MASTER_ADDR's network" + (via.empty() ? std::string() : " (" + via + ")") +
                  ", or unset " + var);
    return;
  }
  f.ok(var, what + (picked.size() > 1 || picked[0] != sel.names[0] ? " -> " + join(with_address) : ""));
}

// A job over several nodes (WORLD_SIZE > LOCAL_WORLD_SIZE) cannot meet over the loopback: not at
// MASTER_ADDR, and not at the address Gloo gives its peers (GLOO_SOCKET_IFNAME's interface, else
// the address this host's name resolves to, else the loopback).
void check_across_nodes(Findings& f, const WorkerEnv& env, const std::string& master, bool gloo,
                        const std::vector<InterfaceAddress>& ifs) {
  const int nodes = node_count(env);
  const std::string across = "the job has " + std::to_string(nodes) + " nodes (WORLD_SIZE " +
                             std::to_string(env.world_size) + ", LOCAL_WORLD_SIZE " + std::to_string(env.local_world_size) + ")";
  if (nodes > 1 && is_loopback(master, ifs))
    f.problem("MASTER_ADDR", across + " but MASTER_ADDR " + master + " is a loopback address: each node would meet only itself",
              "set MASTER_ADDR to rank 0's address on the network between the nodes");
  if (!gloo) return;
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname && *ifname) {
    const auto sel = parse_interface_selection("GLOO_SOCKET_IFNAME", ifname);
    for (const auto& name : sel.names)
      if (nodes > 1 &&
          std::any_of(ifs.begin(), ifs.end(), [&](const InterfaceAddress& i) { return i.name == name && i.loopback; }))
        f.problem("GLOO_SOCKET_IFNAME", across + " but GLOO_SOCKET_IFNAME names the loopback (" + name +
                                            "): the other nodes cannot reach the address Gloo gives them",
                  "name the interface on the network between the nodes");
    return;
  }
  const std::string host = host_name();
  const auto self = resolve_host(host);
  const std::string address = self.error.empty() ? self.address : "127.0.0.1";
  const std::string how = self.error.empty() ? "host name '" + host + "' -> " + address
                                             : "host name '" + host + "' does not resolve, so the loopback";
  if (nodes > 1 && is_loopback(address, ifs))
    f.problem("Gloo's address", across + " but Gloo would give its peers " + address + " (" + how +
                                    ", GLOO_SOCKET_IFNAME unset): the other nodes cannot reach it",
              "set GLOO_SOCKET_IFNAME to the interface on the network between the nodes, on every node");
  else
    f.info("Gloo's address", how + " (GLOO_SOCKET_IFNAME unset)");
}

// The inode of the socket listening on `port` (IPv4 or IPv6), from /proc/net/tcp*; empty if none.
std::string listening_inode(int port) {
  char hex[8];
  std::snprintf(hex, sizeof hex, ":%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      if (state == "0A" && local.size() > 5 && local.compare(local.size() - 5, 5, hex) == 0) return inode;
    }
  }
  return "";
}

// The boot id and one of this process's namespaces ("pid", "net").
std::string kernel_identity(const std::string& ns) {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(boot, id);
  std::error_code ec;
  const std::string link = std::filesystem::read_symlink("/proc/self/ns/" + ns, ec).string();
  if (id.empty() || ec || link.empty()) return "";
  return id + "/" + link;
}

}  // namespace

bool Preflight::ok() const {
  return std::none_of(findings.begin(), findings.end(),
                      [](const NetFinding& f) { return f.status == NetFinding::Status::Problem; });
}

std::string Preflight::first_problem() const {
  for (const auto& f : findings)
    if (f.status == NetFinding::Status::Problem) {
      const bool named = f.value.rfind(f.name, 0) == 0;  // "GLOO_SOCKET_IFNAME=..." names itself
      return (named ? "" : f.name + ": ") + f.value + (f.hint.empty() ? "" : "; fix: " + f.hint);
    }
  return "";
}

std::string Preflight::problems() const {
  std::string out;
  for (const auto& f : findings)
    if (f.status == NetFinding::Status::Problem)
      out += (out.empty() ? "" : "; ") + (f.value.rfind(f.name, 0) == 0 ? "" : f.name + ": ") + f.value;
  return out;
}

Preflight preflight(const WorkerEnv& env, const PreflightOptions& o) {
  Preflight p;
  Findings f{p.findings};
  p.interfaces = local_interfaces();
  const auto& ifs = p.interfaces;
  const auto resolved = resolve_host(env.master_addr);
  if (!resolved.error.empty()) {
    f.problem("MASTER_ADDR", "'" + env.master_addr + "' does not resolve: " + resolved.error,
              "use the IP address of rank 0's host, or a name every node resolves (getent hosts NAME)");
    return p;
  }
  p.master_address = resolved.address;
  f.ok("MASTER_ADDR", env.master_addr + (resolved.address == env.master_addr ? "" : " -> " + resolved.address));
  p.route = route_to(resolved.address, env.master_port, ifs);
  if (!p.route.error.empty())
    f.problem("route to MASTER_ADDR", "no route to " + resolved.address + ": " + p.route.error,
              "check MASTER_ADDR and this host's network (ip route get " + resolved.address + ")");
  else
    f.ok("route to MASTER_ADDR",
         "interface " + (p.route.interface.empty() ? "?" : p.route.interface) + " (" + p.route.local_address + ")");
  const bool hosts_store = env.rank == 0 && !env.use_agent_store;
  if (o.strict && hosts_store && !is_local_address(resolved.address, ifs))
    f.problem("MASTER_ADDR", "rank 0 hosts the store, but " + resolved.address + " is not an address of this host (" +
                                 host_name() + ")",
              "set MASTER_ADDR to rank 0's host on every node");
  if (o.strict && hosts_store && env.master_port != 0) {
    const std::string busy = port_unavailable(env.master_port);
    if (!busy.empty()) {
      const std::string holder = port_holder(env.master_port);
      f.problem("MASTER_PORT",
                std::to_string(env.master_port) + " cannot be listened on: " + busy + (holder.empty() ? "" : " (held by " + holder + ")"),
                env.master_port < 1024 ? "ports below 1024 need root: choose MASTER_PORT above 1024"
                                       : "another job or an old rank 0 holds it: choose another MASTER_PORT");
    } else {
      f.ok("MASTER_PORT", std::to_string(env.master_port) + " free on this host");
    }
  }
  if (env.use_agent_store) f.info("MASTER_PORT", std::to_string(env.master_port) + ": the launcher's agent hosts the store");
  for (const auto& var : o.interface_variables)
    check_interface_variable(f, var, env, resolved.address, p.route, ifs, o.strict);
  check_across_nodes(f, env, resolved.address, o.gloo, ifs);
  return p;
}

std::string interface_variable_of(const std::string& backend) {
  if (backend == "gloo") return "GLOO_SOCKET_IFNAME";
  if (backend == "nccl") return "NCCL_SOCKET_IFNAME";
  if (backend == "hccl") return "HCCL_SOCKET_IFNAME";
  return "";
}

std::string diagnose_store(const std::string& address, int port) {
  const auto p = probe_tcp(address, port, std::chrono::milliseconds(2000));
  const std::string where = address + ":" + std::to_string(port);
  switch (p.result) {
    case Reachability::Refused:
      return "nothing listens on " + where + " (connection refused): rank 0 is not running, has exited, or was given "
             "another MASTER_PORT";
    case Reachability::NoAnswer:
      return where + " does not answer (" + p.detail + "): a wrong MASTER_ADDR, a host that is down, or a firewall "
             "dropping the packets";
    case Reachability::Unreachable: return "no route to " + where + " (" + p.detail + ")";
    case Reachability::Accepts: {
      const std::string holder = is_local_address(address, local_interfaces()) ? port_holder(port) : "";
      if (!holder.empty())
        return where + " accepts connections but no rendezvous store answers there: the port is held by " + holder +
               " on this host; choose another MASTER_PORT (or stop that process if it is a stalled rank 0)";
      return where + " accepts connections but no rendezvous store answers there: another service holds MASTER_PORT, "
             "something between the hosts answers for it, or rank 0 is stalled";
    }
    case Reachability::Error: return "connecting to " + where + " failed: " + p.detail;
  }
  return "";
}

std::string port_holder(int port) {
  const std::string inode = listening_inode(port);
  if (inode.empty()) return "";
  const std::string target = "socket:[" + inode + "]";
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code fd_ec;
    for (const auto& fd : std::filesystem::directory_iterator(proc.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      if (std::filesystem::read_symlink(fd.path(), link_ec).string() != target) continue;
      std::ifstream comm(proc.path() / "comm");
      std::string name;
      std::getline(comm, name);
      return (name.empty() ? "a process" : name) + " (pid " + pid + ")";
    }
  }
  return "";
}

std::string node_identity() { return kernel_identity("pid"); }

std::string network_identity() { return kernel_identity("net"); }

AdvertisedAddress advertised_address(const std::string& backend) {
  if (backend != "gloo") return {};
  const auto ifs = local_interfaces();
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname && *ifname) {
    const auto sel = parse_interface_selection("GLOO_SOCKET_IFNAME", ifname);
    if (sel.names.empty()) return {};
    std::string v6;
    for (const auto& i : ifs)
      if (i.name == sel.names[0]) {
        if (i.address.find(':') == std::string::npos) return {i.address, std::string("GLOO_SOCKET_IFNAME=") + ifname};
        if (v6.empty() && i.address.rfind("fe80:", 0) != 0) v6 = i.address;
      }
    return {v6, std::string("GLOO_SOCKET_IFNAME=") + ifname};
  }
  const std::string host = host_name();
  const auto self = resolve_host(host);
  if (self.error.empty() && is_local_address(self.address, ifs))
    return {self.address, "host name '" + host + "', GLOO_SOCKET_IFNAME unset"};
  return {"127.0.0.1", "host name '" + host + "' is not an address of its host, so the loopback; GLOO_SOCKET_IFNAME unset"};
}

std::string unreachable_peer_address(const std::string& address) {
  if (address.empty()) return "";
  const auto ifs = local_interfaces();
  if (is_loopback(address, ifs)) return "a loopback address, which reaches only its own host";
  if (is_local_address(address, ifs)) return "an address this host has too, so a connection to it would stay here";
  const Route r = route_to(address, 0, ifs);
  if (!r.error.empty()) return "this host has no route to it (" + r.error + ")";
  return "";
}

}  // namespace crosstrain::dist
