// `doctor --distributed`: the network and rendezvous of a data-parallel job, checked from every rank.
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
#include "tools/dist/preflight.h"
#include "tools/dist/worker_env.h"
#include "tools/doctor/doctor.h"

namespace crosstrain::doctor {

namespace {

using Clock = std::chrono::steady_clock;
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

// The preflight's findings as doctor checks.
void add_findings(Findings& f, const dist::Preflight& p) {
  for (const auto& n : p.findings) {
    if (n.status == dist::NetFinding::Status::Problem) f.problem(n.name, n.value, n.hint);
    else if (n.status == dist::NetFinding::Status::Info) f.info(n.name, n.value);
    else f.ok(n.name, n.value);
  }
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

  // Before any waiting: the address, the route, the port, the interface variables. A rank that
  // stops here tells the others, so rank 0 names it instead of waiting for it.
  dist::PreflightOptions po;
  po.gloo = o.dist_backend == "gloo" || (o.dist_backend == "auto" && (o.device == "auto" || o.device == "cpu"));
  po.strict = true;
  const dist::Preflight pre = dist::preflight(*env, po);
  add_findings(f, pre);
  const dist::Route& route = pre.route;
  const auto& ifs = pre.interfaces;
  if (f.problems() > 0) {
    f.info("rendezvous", "not attempted: fix the problems above first");
    if (env->world_size > 1 && !pre.master_address.empty() && pre.route.error.empty()) r.untold = pre.problems();
    return r;
  }

  // The rendezvous and the collectives.
  dist::GroupOptions go;
  go.backend = o.dist_backend;
  go.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.dist_timeout_s * 1000));
  go.preflight = false;  // done above, strictly
  const auto dev = core::DeviceContext::open(o.device == "auto" ? "cpu" : o.device);
  std::unique_ptr<dist::Group> g;
  const auto t0 = Clock::now();
  try {
    g = dist::Group::join(*env, dev, go);
  } catch (const dist::PeerFailure& e) {
    f.problem("rank " + std::to_string(e.rank()), e.reason() + " (on " + e.host() + ")",
              "see rank " + std::to_string(e.rank()) + "'s report: it stopped before the rendezvous");
    return r;
  } catch (const std::exception& e) {
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));  // c10's exceptions carry a stack after the first line
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
  std::set<std::string> hosts;  // machines: two nodes may share a host name
  for (const auto& p : g->peers()) hosts.insert(p.node.empty() ? p.host : p.node);
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

bool tell_rank0(const DistributedDoctorReport& r, const DoctorOptions& o) {
  if (r.untold.empty()) return false;
  const auto env = dist::WorkerEnv::from_environment();
  if (!env) return false;
  const std::chrono::milliseconds limit(static_cast<int64_t>(std::min(o.dist_timeout_s, 5.0) * 1000));
  return dist::Group::announce_failure(*env, r.untold, limit);
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

}  // namespace crosstrain::doctor
