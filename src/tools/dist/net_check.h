#pragma once
// What this host's network says about a rendezvous address, without joining anything: the checks
// `doctor --distributed` runs before it waits on a store. Each answers at once (no timeouts but
// the name resolver's and probe_tcp's own). Torch-free.
//
//   auto ifs = dist::local_interfaces();
//   auto addr = dist::resolve_host("node0");          // "10.1.0.4", or .error from the resolver
//   auto route = dist::route_to(addr.address, 29500, ifs);   // the interface the kernel would use
#include <chrono>
#include <string>
#include <vector>

namespace crosstrain::dist {

// One address of one interface (getifaddrs), IPv4 or IPv6.
struct InterfaceAddress {
  std::string name;      // "eth0"
  std::string address;   // numeric
  int prefix_length = 0; // from the netmask
  bool loopback = false;
  bool up = false;
};

std::vector<InterfaceAddress> local_interfaces();
// Every interface name, also those without an address (/sys/class/net), sorted.
std::vector<std::string> interface_names();

struct Resolved {
  std::string address;   // numeric, IPv4 preferred; empty when `error` is set
  std::string error;
};
Resolved resolve_host(const std::string& host);

// The local address and interface the kernel picks for `address` (a connected UDP socket: no packet
// is sent). `error` when there is no route.
struct Route {
  std::string local_address, interface;
  std::string error;
};
Route route_to(const std::string& address, int port, const std::vector<InterfaceAddress>& interfaces);

// Whether `address` is one of this host's own addresses (loopback included).
bool is_local_address(const std::string& address, const std::vector<InterfaceAddress>& interfaces);
// Whether `address` lies in the subnet of one of `name`'s addresses.
bool on_link(const std::string& address, const std::string& name, const std::vector<InterfaceAddress>& interfaces);

// A *_SOCKET_IFNAME value. Gloo takes exact names; NCCL and HCCL take prefixes ("eth" matches eth0),
// "=" before the list for exact names and "^" for names to avoid.
struct InterfaceSelection {
  std::string variable, value;
  bool exact = true;
  bool exclude = false;
  std::vector<std::string> names;
};
InterfaceSelection parse_interface_selection(const std::string& variable, const std::string& value);
// The interfaces of `all` one entry of the selection picks (none for an exclusion list).
std::vector<std::string> interfaces_matching(const InterfaceSelection& s, const std::string& entry,
                                             const std::vector<std::string>& all);

// A TCP connection attempt to address:port that gives up after `timeout`.
enum class Reachability { Accepts, Refused, NoAnswer, Unreachable, Error };
struct Probe {
  Reachability result = Reachability::Error;
  std::string detail;  // the system's message
};
Probe probe_tcp(const std::string& address, int port, std::chrono::milliseconds timeout);

// Whether a listening socket could take `port` on every address of this host (what a rendezvous
// store does); the system's message when it cannot.
std::string port_unavailable(int port);

}  // namespace crosstrain::dist
