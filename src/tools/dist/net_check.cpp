#include "tools/dist/net_check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

namespace crosstrain::dist {

namespace {

// A socket closed when it goes out of scope.
struct Socket {
  int fd = -1;
  explicit Socket(int f) : fd(f) {}
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
};

std::string numeric(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

int prefix_of(const sockaddr* mask) {
  if (!mask) return 0;
  const unsigned char* p = nullptr;
  size_t n = 0;
  if (mask->sa_family == AF_INET) {
    p = reinterpret_cast<const unsigned char*>(&reinterpret_cast<const sockaddr_in*>(mask)->sin_addr);
    n = 4;
  } else if (mask->sa_family == AF_INET6) {
    p = reinterpret_cast<const unsigned char*>(&reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr);
    n = 16;
  }
  int bits = 0;
  for (size_t i = 0; i < n; ++i) bits += __builtin_popcount(p[i]);
  return bits;
}

// A numeric address as a socket address with `port`; false when it is not numeric.
bool to_sockaddr(const std::string& address, int port, sockaddr_storage& out, socklen_t& len) {
  std::memset(&out, 0, sizeof out);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
  if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
  if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

// The raw bytes of a numeric address (4 or 16), empty when it is not one.
std::vector<unsigned char> address_bytes(const std::string& address) {
  unsigned char buf[16];
  if (::inet_pton(AF_INET, address.c_str(), buf) == 1) return {buf, buf + 4};
  if (::inet_pton(AF_INET6, address.c_str(), buf) == 1) return {buf, buf + 16};
  return {};
}

}  // namespace

std::vector<InterfaceAddress> local_interfaces() {
  std::vector<InterfaceAddress> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
    InterfaceAddress a;
    a.name = i->ifa_name;
    a.address = numeric(i->ifa_addr);
    a.prefix_length = prefix_of(i->ifa_netmask);
    a.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    a.up = (i->ifa_flags & IFF_UP) != 0;
    out.push_back(a);
  }
  ::freeifaddrs(list);
  return out;
}

std::vector<std::string> interface_names() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/net", ec)) names.insert(e.path().filename());
  for (const auto& a : local_interfaces()) names.insert(a.name);
  return {names.begin(), names.end()};
}

Resolved resolve_host(const std::string& host) {
  if (host.empty()) return {"", "the address is empty"};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0) return {"", rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc)};
  std::string v4, v6;
  for (addrinfo* a = res; a; a = a->ai_next) {
    if (a->ai_family == AF_INET && v4.empty()) v4 = numeric(a->ai_addr);
    if (a->ai_family == AF_INET6 && v6.empty()) v6 = numeric(a->ai_addr);
  }
  ::freeaddrinfo(res);
  if (v4.empty() && v6.empty()) return {"", "no IPv4 or IPv6 address"};
  return {v4.empty() ? v6 : v4, ""};
}

Route route_to(const std::string& address, int port, const std::vector<InterfaceAddress>& interfaces) {
  sockaddr_storage to{};
  socklen_t len = 0;
  if (!to_sockaddr(address, port > 0 ? port : 9, to, len)) return {"", "", "'" + address + "' is not a numeric address"};
  Socket s(::socket(to.ss_family, SOCK_DGRAM, 0));
  if (s.fd < 0) return {"", "", std::strerror(errno)};
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&to), len) != 0) return {"", "", std::strerror(errno)};
  sockaddr_storage local{};
  socklen_t local_len = sizeof local;
  if (::getsockname(s.fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return {"", "", std::strerror(errno)};
  Route r;
  r.local_address = numeric(reinterpret_cast<sockaddr*>(&local));
  for (const auto& i : interfaces)
    if (i.address == r.local_address) {
      r.interface = i.name;
      break;
    }
  return r;
}

bool is_local_address(const std::string& address, const std::vector<InterfaceAddress>& interfaces) {
  const auto bytes = address_bytes(address);
  if (bytes.size() == 4 && bytes[0] == 127) return true;  // all of 127/8 is the loopback
  return std::any_of(interfaces.begin(), interfaces.end(), [&](const InterfaceAddress& i) {
    return address_bytes(i.address) == bytes;
  });
}

bool on_link(const std::string& address, const std::string& name, const std::vector<InterfaceAddress>& interfaces) {
  const auto a = address_bytes(address);
  for (const auto& i : interfaces) {
    if (i.name != name) continue;
    const auto b = address_bytes(i.address);
    if (a.empty() || a.size() != b.size() || i.prefix_length == 0) continue;
    bool same = true;
    for (int bit = 0; bit < i.prefix_length && same; ++bit) {
      const unsigned char m = static_cast<unsigned char>(0x80u >> (bit % 8));
      same = (a[static_cast<size_t>(bit / 8)] & m) == (b[static_cast<size_t>(bit / 8)] & m);
    }
    if (same) return true;
  }
  return false;
}

InterfaceSelection parse_interface_selection(const std::string& variable, const std::string& value) {
  InterfaceSelection s;
  s.variable = variable;
  s.value = value;
  std::string list = value;
  const bool gloo = variable.rfind("GLOO", 0) == 0;
  s.exact = gloo;
  if (!gloo && !list.empty() && list[0] == '^') {
    s.exclude = true;
    list.erase(0, 1);
  }
  if (!gloo && !list.empty() && list[0] == '=') {
    s.exact = true;
    list.erase(0, 1);
  }
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    std::string name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!name.empty()) s.names.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return s;
}

std::vector<std::string> interfaces_matching(const InterfaceSelection& s, const std::string& entry,
                                             const std::vector<std::string>& all) {
  std::vector<std::string> out;
  if (s.exclude) return out;
  for (const auto& name : all)
    if (s.exact ? name == entry : name.rfind(entry, 0) == 0) out.push_back(name);
  return out;
}

Probe probe_tcp(const std::string& address, int port, std::chrono::milliseconds timeout) {
  sockaddr_storage to{};
  socklen_t len = 0;
  if (!to_sockaddr(address, port, to, len)) return {Reachability::Error, "'" + address + "' is not a numeric address"};
  Socket s(::socket(to.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0));
  if (s.fd < 0) return {Reachability::Error, std::strerror(errno)};
  auto classify = [](int err) -> Probe {
    if (err == 0) return {Reachability::Accepts, ""};
    if (err == ECONNREFUSED) return {Reachability::Refused, std::strerror(err)};
    if (err == ENETUNREACH || err == EHOSTUNREACH || err == EHOSTDOWN)
      return {Reachability::Unreachable, std::strerror(err)};
    if (err == ETIMEDOUT) return {Reachability::NoAnswer, std::strerror(err)};
    return {Reachability::Error, std::strerror(err)};
  };
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&to), len) == 0) return classify(0);
  if (errno != EINPROGRESS) return classify(errno);
  pollfd p{s.fd, POLLOUT, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
  if (ready == 0) return {Reachability::NoAnswer, "no answer within " + std::to_string(timeout.count()) + " ms"};
  if (ready < 0) return {Reachability::Error, std::strerror(errno)};
  int err = 0;
  socklen_t err_len = sizeof err;
  ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &err_len);
  return classify(err);
}

std::string port_unavailable(int port) {
  for (const int family : {AF_INET6, AF_INET}) {
    Socket s(::socket(family, SOCK_STREAM, 0));
    if (s.fd < 0) continue;  // no IPv6 on this host: try IPv4
    const int one = 1;
    ::setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage a{};
    socklen_t len = 0;
    if (!to_sockaddr(family == AF_INET6 ? "::" : "0.0.0.0", port, a, len)) continue;
    if (::bind(s.fd, reinterpret_cast<sockaddr*>(&a), len) == 0) return "";
    if (errno == EADDRINUSE || errno == EACCES) return std::strerror(errno);
  }
  return "";
}

}  // namespace crosstrain::dist
