#pragma once
// Hosts for tests, made of Linux network namespaces (iproute2's `ip netns`, root only): each
// namespace has its own interfaces, addresses and routes, so two of them joined by a veth pair are
// two nodes of a job on one machine. Tests that need them skip when they are not available.
//
//   NetNamespaces net;
//   if (!net.available()) GTEST_SKIP() << net.why_not();
//   const auto a = net.add("a"), b = net.add("b");
//   net.link(a, "va", "10.77.0.1/24", b, "vb", "10.77.0.2/24");
//   workers.start(env, "train ...", net.exec(a));
#include <unistd.h>

#include <string>
#include <vector>

#include "test_support.h"

namespace crosstrain::testing {

class NetNamespaces {
 public:
  NetNamespaces() {
    if (::geteuid() != 0) {
      why_not_ = "network namespaces need root";
      return;
    }
    const std::string probe = add("probe");
    if (probe.empty()) why_not_ = "`ip netns add` does not work here: " + last_error_;
  }
  ~NetNamespaces() {
    for (const auto& name : names_) run_command("ip netns del " + name + " 2>&1");
  }
  NetNamespaces(const NetNamespaces&) = delete;
  NetNamespaces& operator=(const NetNamespaces&) = delete;

  bool available() const { return why_not_.empty(); }
  const std::string& why_not() const { return why_not_; }

  // A namespace with its loopback up; its name (unique to this process), empty on failure.
  std::string add(const std::string& name) {
    const std::string full = "ct" + std::to_string(::getpid()) + name;
    if (!ok("ip netns add " + full)) return "";
    names_.push_back(full);
    if (!ok("ip -n " + full + " link set lo up")) return "";
    return full;
  }
  // A veth pair: `if_a` with `addr_a` (CIDR) in namespace `a`, `if_b` with `addr_b` in `b` (which
  // may be `a`: then both ends are interfaces of one host, joined to nothing else).
  bool link(const std::string& a, const std::string& if_a, const std::string& addr_a, const std::string& b,
            const std::string& if_b, const std::string& addr_b) {
    return ok("ip -n " + a + " link add " + if_a + " type veth peer name " + if_b + " netns " + b) &&
           ok("ip -n " + a + " addr add " + addr_a + " dev " + if_a) &&
           ok("ip -n " + b + " addr add " + addr_b + " dev " + if_b) && ok("ip -n " + a + " link set " + if_a + " up") &&
           ok("ip -n " + b + " link set " + if_b + " up");
  }
  // The shell words that run a command in namespace `ns`.
  static std::string exec(const std::string& ns) { return "ip netns exec " + ns; }
  const std::string& last_error() const { return last_error_; }

 private:
  bool ok(const std::string& cmd) {
    const auto r = run_command(cmd);
    if (r.exit_code != 0) last_error_ = cmd + ": " + r.output;
    return r.exit_code == 0;
  }

  std::vector<std::string> names_;
  std::string why_not_, last_error_;
};

}  // namespace crosstrain::testing
