// `doctor --distributed`: the network and rendezvous of a data-parallel job, checked from every rank.
#include <c10/util/Logging.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>

#include "core/device.h"
#include "report/output.h"
#include "report/table.h"
#include "report/units.h"
#include "tools/dist/group.h"
#include "tools/dist/net_check.h"
#include "tools/dist/worker_env.h"
#include "tools/doctor.h"

namespace crosstrain::tools {

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kIfnameVariables[] = {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME"};

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? buf : "?";
}

class Findings {
 public:
  explicit Findings(std::vector<DoctorCheck>& checks) : checks_(checks) {}
  void ok(std::string name, std::string value) { checks_.push_back({std::move(name), std::move(value), CheckStatus::Ok, true, ""}); }
  void info(std::string name, std::string value) {
    checks_.push_back({std::move(name), std::move(value), CheckStatus::Info, false, ""});
  }
  void problem(std::string name, std::string value, std::string hint) {
    checks_.push_back({std::move(name), std::move(value), CheckStatus::Missing, true, std::move(hint)});
  }
  size_t problems() const {
    return static_cast<size_t>(std::count_if(checks_.begin(), checks_.end(), [](const DoctorCheck& c) {
      return c.required && c.status == CheckStatus::Missing;
    }));
  }

 private:
  std::vector<DoctorCheck>& checks_;
};

// The *_SOCKET_IFNAME variables: every interface named exists, has an address and reaches MASTER_ADDR.
void check_interface_variables(Findings& f, const std::string& master, const dist::Route& route,
                               const std::vector<dist::InterfaceAddress>& ifs) {
  const auto names = dist::interface_names();
  for (const char* var : kIfnameVariables) {
    const char* value = std::getenv(var);
    if (!value || !*value) continue;
    const auto sel = dist::parse_interface_selection(var, value);
    const std::string what = std::string(var) + "=" + value;
    if (sel.exclude) {
      f.info(var, what + " (interfaces to avoid)");
      continue;
    }
    bool good = true;
    std::vector<std::string> picked;
    for (const auto& entry : sel.names) {
      const auto m = dist::interfaces_matching(sel, entry, names);
      if (m.empty()) {
        f.problem(var, what + ": no interface " + (sel.exact ? "" : "starting with ") + "'" + entry + "' on this host (" +
                           join(names) + ")",
                  "name an interface of `ip link` (on every node), or unset " + std::string(var));
        good = false;
      }
      picked.insert(picked.end(), m.begin(), m.end());
    }
    if (!good) continue;
    std::vector<std::string> with_address, without;
    for (const auto& name : picked) {
      const bool has = std::any_of(ifs.begin(), ifs.end(), [&](const dist::InterfaceAddress& a) { return a.name == name; });
      (has ? with_address : without).push_back(name);
    }
    if (with_address.empty()) {
      f.problem(var, what + ": " + join(without) + " has no IP address (down or unconfigured)",
                "bring the interface up or name another one");
      continue;
    }
    // It reaches MASTER_ADDR when the kernel routes there through it, when MASTER_ADDR is in its
    // subnet, or when MASTER_ADDR is this host's own address (a job on one host).
    const bool reaches = std::any_of(with_address.begin(), with_address.end(), [&](const std::string& n) {
      return n == route.interface || dist::on_link(master, n, ifs);
    }) || dist::is_local_address(master, ifs);
    if (!reaches) {
      f.problem(var, what + ": " + join(with_address) + " has no route to MASTER_ADDR " + master +
                         (route.interface.empty() ? " (this host has none)"
                                                  : " (the kernel reaches it through " + route.interface + ")"),
                "name the interface on MASTER_ADDR's network" +
                    (route.interface.empty() ? std::string() : " (" + route.interface + ")") + ", or unset " + var);
      continue;
    }
    f.ok(var, what + (picked.size() > 1 || picked[0] != sel.names[0] ? " -> " + join(with_address) : ""));
  }
}

// A job over several nodes (WORLD_SIZE > LOCAL_WORLD_SIZE) cannot meet over the loopback: not at
// MASTER_ADDR, and not at the address Gloo gives its peers (GLOO_SOCKET_IFNAME's interface, else
// the address this host's name resolves to, else the loopback).
void check_across_nodes(Findings& f, const dist::WorkerEnv& env, const std::string& master, bool gloo,
                        const std::vector<dist::InterfaceAddress>& ifs) {
  const auto loopback_address = [&](const std::string& a) {
    return a.rfind("127.", 0) == 0 || a == "::1" ||
           std::any_of(ifs.begin(), ifs.end(), [&](const dist::InterfaceAddress& i) { return i.address == a && i.loopback; });
  };
  const int nodes = (env.world_size + env.local_world_size - 1) / env.local_world_size;
  const std::string across = "the job has " + std::to_string(nodes) + " nodes (WORLD_SIZE " +
                             std::to_string(env.world_size) + ", LOCAL_WORLD_SIZE " + std::to_string(env.local_world_size) + ")";
  if (nodes > 1 && loopback_address(master))
    f.problem("MASTER_ADDR", across + " but MASTER_ADDR " + master + " is a loopback address: each node would meet only itself",
              "set MASTER_ADDR to rank 0's address on the network between the nodes");
  if (!gloo) return;
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname && *ifname) {
    const auto sel = dist::parse_interface_selection("GLOO_SOCKET_IFNAME", ifname);
    for (const auto& name : sel.names)
      if (nodes > 1 && std::any_of(ifs.begin(), ifs.end(),
                                   [&](const dist::InterfaceAddress& i) { return i.name == name && i.loopback; }))
        f.problem("GLOO_SOCKET_IFNAME", across + " but GLOO_SOCKET_IFNAME names the loopback (" + name + ")",
                  "name the interface on the network between the nodes");
    return;
  }
  const std::string host = host_name();
  const auto self = dist::resolve_host(host);
  const std::string address = self.error.empty() ? self.address : "127.0.0.1";
  const std::string how = self.error.empty() ? "host name '" + host + "' -> " + address
                                             : "host name '" + host + "' does not resolve, so the loopback";
  if (nodes > 1 && loopback_address(address))
    f.problem("Gloo's address", across + " but Gloo would give its peers " + address + " (" + how +
                                    ", GLOO_SOCKET_IFNAME unset): the other nodes cannot reach it",
              "set GLOO_SOCKET_IFNAME to the interface on the network between the nodes, on every node");
  else
    f.info("Gloo's address", how + " (GLOO_SOCKET_IFNAME unset)");
}

// Why the rendezvous store could not be reached, from a direct connection attempt.
std::string diagnose_store(const std::string& address, int port) {
  const auto p = dist::probe_tcp(address, port, std::chrono::milliseconds(2000));
  const std::string where = address + ":" + std::to_string(port);
  switch (p.result) {
    case dist::Reachability::Refused:
      return "nothing listens on " + where + " (connection refused): rank 0 is not running, has exited, or was given "
             "another MASTER_PORT";
    case dist::Reachability::NoAnswer:
      return where + " does not answer (" + p.detail + "): a wrong MASTER_ADDR, a host that is down, or a firewall "
             "dropping the packets";
    case dist::Reachability::Unreachable: return "no route to " + where + " (" + p.detail + ")";
    case dist::Reachability::Accepts:
      return where + " accepts connections but no rendezvous store answered: another service holds MASTER_PORT, "
             "something between the hosts answers for it, or rank 0 is stalled";
    case dist::Reachability::Error: return "connecting to " + where + " failed: " + p.detail;
  }
  return "";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

bool DistributedDoctorReport::ok() const {
  return std::none_of(checks.begin(), checks.end(),
                      [](const DoctorCheck& c) { return c.required && c.status == CheckStatus::Missing; });
}

DistributedDoctorReport run_distributed_doctor(const DoctorOptions& o) {
  DistributedDoctorReport r;
  Findings f(r.checks);
  std::optional<dist::WorkerEnv> env;
  try {
    env = dist::WorkerEnv::from_environment();
  } catch (const std::exception& e) {
    f.problem("launcher variables", e.what(), "start the workers with torchrun or `crosstrain launch`");
    return r;
  }
  if (env) {
    f.ok("worker", env->describe());
  } else {
    env = dist::WorkerEnv::single();
    env->master_port = 0;  // a store of its own, on any free port
    f.info("worker", "no RANK / WORLD_SIZE: one process, rank 0 of 1 (run under torchrun or crosstrain launch)");
  }
  r.rank = env->rank;
  r.world_size = env->world_size;
  r.store = env->master_addr + ":" + std::to_string(env->master_port);

  // Before any waiting: the address, the route, the port, the interface variables.
  const auto ifs = dist::local_interfaces();
  const auto resolved = dist::resolve_host(env->master_addr);
  dist::Route route;
  if (!resolved.error.empty()) {
    f.problem("MASTER_ADDR", "'" + env->master_addr + "' does not resolve: " + resolved.error,
              "use the IP address of rank 0's host, or a name every node resolves (getent hosts NAME)");
  } else {
    f.ok("MASTER_ADDR", env->master_addr + (resolved.address == env->master_addr ? "" : " -> " + resolved.address));
    route = dist::route_to(resolved.address, env->master_port, ifs);
    if (!route.error.empty())
      f.problem("route to MASTER_ADDR", "no route to " + resolved.address + ": " + route.error,
                "check MASTER_ADDR and this host's network (ip route get " + resolved.address + ")");
    else
      f.ok("route to MASTER_ADDR", "interface " + (route.interface.empty() ? "?" : route.interface) + " (" +
                                       route.local_address + ")");
    const bool hosts_store = env->rank == 0 && !env->use_agent_store;
    if (hosts_store && !dist::is_local_address(resolved.address, ifs))
      f.problem("MASTER_ADDR", "rank 0 hosts the store, but " + resolved.address + " is not an address of this host (" +
                                   host_name() + ")",
                "set MASTER_ADDR to rank 0's host on every node");
    if (hosts_store && env->master_port != 0) {
      const std::string busy = dist::port_unavailable(env->master_port);
      if (!busy.empty())
        f.problem("MASTER_PORT", std::to_string(env->master_port) + " cannot be listened on: " + busy,
                  env->master_port < 1024 ? "ports below 1024 need root: choose MASTER_PORT above 1024"
                                          : "another job or an old rank 0 holds it: choose another MASTER_PORT");
      else
        f.ok("MASTER_PORT", std::to_string(env->master_port) + " free on this host");
    }
    if (env->use_agent_store)
      f.info("MASTER_PORT", std::to_string(env->master_port) + ": the launcher's agent hosts the store");
    check_interface_variables(f, resolved.address, route, ifs);
    const bool gloo = o.dist_backend == "gloo" || (o.dist_backend == "auto" && (o.device == "auto" || o.device == "cpu"));
    check_across_nodes(f, *env, resolved.address, gloo, ifs);
  }
  if (f.problems() > 0) {
    f.info("rendezvous", "not attempted: fix the problems above first");
    return r;
  }

  // The rendezvous and the collectives.
  dist::GroupOptions go;
  go.backend = o.dist_backend;
  go.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.dist_timeout_s * 1000));
  const auto dev = core::DeviceContext::open(o.device == "auto" ? "cpu" : o.device);
  std::unique_ptr<dist::Group> g;
  const auto t0 = Clock::now();
  // c10d logs every connection retry with a stack; the report below says what went wrong instead.
  const int log_level = FLAGS_caffe2_log_level;
  FLAGS_caffe2_log_level = 3;
  try {
    g = dist::Group::join(*env, dev, go);
    FLAGS_caffe2_log_level = log_level;
  } catch (const std::exception& e) {
    FLAGS_caffe2_log_level = log_level;
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));  // c10's exceptions carry a stack after the first line
    for (const std::string advice : {"; `crosstrain doctor --distributed` checks the connection"})
      if (const auto at = why.find(advice); at != std::string::npos) why.erase(at, advice.size());
    const bool dropped = why.find("closed") != std::string::npos || why.find("reset by peer") != std::string::npos;
    if (dropped)  // the store was there, then went away
      why += "; the store at " + r.store + " closed the connection during the rendezvous: rank 0 stopped (its " +
             "report says why, e.g. a different WORLD_SIZE)";
    else if (env->rank != 0 || env->use_agent_store)
      why += "; " + diagnose_store(resolved.address, env->master_port);
    f.problem("rendezvous", why, "every worker needs the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE, and rank 0 running");
    return r;
  }
  r.rendezvous_s = std::chrono::duration<double>(Clock::now() - t0).count();
  r.joined = true;
  r.backend = g->backend_name();
  f.ok("rendezvous", std::to_string(g->size()) + " rank" + (g->size() == 1 ? "" : "s") + " over " + r.backend + " in " +
                         report::format_fixed(r.rendezvous_s, 2) + " s");

  const int n = g->size();
  at::Tensor t = at::full({4}, static_cast<float>(g->rank() + 1), at::TensorOptions().device(dev.device()));
  g->all_reduce_sum(t, "the all-reduce check");
  const float expected = n * (n + 1) / 2.0f;
  const bool exact = (t.to(at::kCPU) == expected).all().item<bool>();
  if (exact) f.ok("all-reduce", "sum of rank + 1 over " + std::to_string(n) + " ranks = " + report::format_fixed(expected, 0));
  else f.problem("all-reduce", "wrong sum: " + report::format_fixed(t.to(at::kCPU)[0].item<double>(), 3) + ", expected " +
                                   report::format_fixed(expected, 0), "the backend returned wrong values");
  std::vector<double> lat;
  at::Tensor one = at::ones({1}, at::TensorOptions().device(dev.device()));
  for (int i = 0; i < 23; ++i) {
    const auto s = Clock::now();
    g->all_reduce_sum(one, "a small all-reduce");
    dev.synchronize();
    if (i >= 3) lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
  }
  g->barrier("the barrier");

  // Where this rank stands, for rank 0's report; a job across hosts cannot run on the loopback.
  std::set<std::string> hosts;
  for (const auto& p : g->peers()) hosts.insert(p.host);
  const auto is_loopback = [&](const std::string& name) {
    return std::any_of(ifs.begin(), ifs.end(), [&](const dist::InterfaceAddress& a) { return a.name == name && a.loopback; });
  };
  if (hosts.size() > 1 && is_loopback(route.interface))
    f.problem("route to MASTER_ADDR", "the job spans " + std::to_string(hosts.size()) + " hosts but this rank reaches " +
                                          env->master_addr + " over the loopback",
              "set MASTER_ADDR to rank 0's address on the network between the hosts");
  nlohmann::json mine = {{"host", g->peers()[static_cast<size_t>(g->rank())].host},
                         {"pid", static_cast<int64_t>(getpid())},
                         {"interface", route.interface},
                         {"address", route.local_address},
                         {"device", dev.name()},
                         {"latency_us", median(lat)},
                         {"latency_max_us", *std::max_element(lat.begin(), lat.end())},
                         {"checks", distributed_doctor_to_json(r)["checks"]}};
  g->guarded("sharing this rank's findings", [&] { g->store().set("doctor/" + std::to_string(g->rank()), bytes(mine.dump())); });
  g->barrier("the barrier after sharing the findings");
  if (g->rank() == 0) {
    for (int q = 0; q < n; ++q) {
      nlohmann::json j;
      g->guarded("reading rank " + std::to_string(q) + "'s findings", [&] {
        const auto b = g->store().get("doctor/" + std::to_string(q));
        j = nlohmann::json::parse(std::string(b.begin(), b.end()));
      });
      DistributedRank dr;
      dr.rank = q;
      dr.host = j.at("host").get<std::string>();
      dr.pid = j.at("pid").get<int64_t>();
      dr.interface = j.at("interface").get<std::string>();
      dr.address = j.at("address").get<std::string>();
      dr.device = j.at("device").get<std::string>();
      dr.latency_us = j.at("latency_us").get<double>();
      dr.latency_max_us = j.at("latency_max_us").get<double>();
      r.ranks.push_back(dr);
      if (q == 0) continue;
      for (const auto& c : j.at("checks"))
        if (c.at("status") == "missing")
          f.problem("rank " + std::to_string(q) + ": " + c.at("name").get<std::string>(), c.at("value").get<std::string>(),
                    c.at("hint").get<std::string>());
    }
  }
  // Every rank ends with the job's verdict.
  at::Tensor bad = at::full({1}, static_cast<float>(f.problems()), at::kFloat);
  g->all_reduce_sum(bad, "agreeing on the verdict");
  if (bad.item<float>() > 0 && f.problems() == 0)
    f.problem("other ranks", "another rank found a problem", "see rank 0's report");
  g->barrier("the final barrier");
  return r;
}

std::string render_distributed_doctor(const DistributedDoctorReport& r) {
  // One line per check (the values are sentences), the fix under a problem.
  size_t width = 0;
  for (const auto& c : r.checks) width = std::max(width, c.name.size());
  std::string out;
  for (const auto& c : r.checks) {
    const bool bad = c.required && c.status == CheckStatus::Missing;
    std::string status = bad ? "PROBLEM" : c.status == CheckStatus::Info ? "info" : "ok";
    out += status + std::string(9 - status.size(), ' ') + c.name + std::string(width + 2 - c.name.size(), ' ') + c.value + "\n";
    if (bad && !c.hint.empty()) out += std::string(9 + width + 2, ' ') + "fix: " + c.hint + "\n";
  }
  out += r.ok() ? "overall: ok\n" : "overall: FAILED\n";
  if (!r.ranks.empty()) {
    report::Table t({"rank", "host", "pid", "interface", "address", "device", "all-reduce (median)", "max"});
    for (const size_t col : {size_t{1}, size_t{3}, size_t{4}, size_t{5}}) t.align(col, report::Align::Left);
    for (const auto& k : r.ranks)
      t.add_row({std::to_string(k.rank), k.host, std::to_string(k.pid), k.interface.empty() ? "?" : k.interface,
                 k.address, k.device, report::format_us(k.latency_us), report::format_us(k.latency_max_us)});
    out += "\n" + t.render() + "all-reduce: one float32, 20 runs after 3 warm-up, per rank\n";
  }
  return out;
}

nlohmann::json distributed_doctor_to_json(const DistributedDoctorReport& r) {
  DoctorReport checks;
  checks.checks = r.checks;
  nlohmann::json doc = doctor_to_json(checks);
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& k : r.ranks)
    ranks.push_back({{"rank", k.rank}, {"host", k.host}, {"pid", k.pid}, {"interface", k.interface},
                     {"address", k.address}, {"device", k.device}, {"latency_us", k.latency_us},
                     {"latency_max_us", k.latency_max_us}});
  doc["distributed"] = {{"world_size", r.world_size}, {"joined", r.joined}, {"backend", r.backend},
                        {"store", r.store},           {"rendezvous_s", r.rendezvous_s}, {"ranks", ranks}};
  return doc;
}

}  // namespace crosstrain::tools
