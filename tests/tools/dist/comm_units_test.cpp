// comm-bench's sizes and bus factors, and the network checks doctor --distributed runs before a
// rendezvous, on values and on this host's loopback.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tools/dist/comm_bench.h"
#include "tools/dist/net_check.h"

namespace dist = crosstrain::dist;

TEST(CommBenchSizes, DoubleFromMinToMaxInWholeElements) {
  EXPECT_EQ(dist::comm_bench_sizes(8, 64, 2, 4), (std::vector<int64_t>{8, 16, 32, 64}));
  EXPECT_EQ(dist::comm_bench_sizes(8, 100, 4, 4), (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(dist::comm_bench_sizes(6, 24, 2, 4), (std::vector<int64_t>{4, 12, 24}));  // rounded down to elements
  EXPECT_EQ(dist::comm_bench_sizes(1ll << 62, (1ll << 62) + 1, 2, 8).size(), 1u);  // no overflow past the end
  EXPECT_THROW(dist::comm_bench_sizes(2, 64, 2, 4), std::invalid_argument);         // less than one element
  EXPECT_THROW(dist::comm_bench_sizes(64, 8, 2, 4), std::invalid_argument);
  EXPECT_THROW(dist::comm_bench_sizes(8, 64, 1, 4), std::invalid_argument);
}

TEST(CommBenchSizes, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(dist::bus_factor("all-reduce", 4), 1.5);
  EXPECT_DOUBLE_EQ(dist::bus_factor("all-gather", 4), 0.75);
  EXPECT_DOUBLE_EQ(dist::bus_factor("reduce-scatter", 8), 0.875);
  EXPECT_DOUBLE_EQ(dist::bus_factor("broadcast", 8), 1.0);
  EXPECT_DOUBLE_EQ(dist::bus_factor("all-reduce", 1), 0.0);
  EXPECT_THROW(dist::bus_factor("all-to-all", 2), std::invalid_argument);
}

TEST(CommBenchReport, UnsupportedRowsSayWhyAndDoNotFail) {
  dist::CommBenchResult r;
  r.world_size = 2;
  r.backend = "gloo";
  r.device = "cpu";
  r.dtype = "float32";
  r.hosts = {"a", "a"};
  dist::CommBenchRow ok{"all-reduce", 1024, 256, true, "", 10.0, 0.1024, 0.1024, 0};
  dist::CommBenchRow refused{"reduce-scatter", 1024, 256, false, "not implemented", 0, 0, 0, 0};
  r.rows = {ok, refused};
  EXPECT_TRUE(r.ok());
  const std::string text = dist::render_comm_bench(r);
  EXPECT_NE(text.find("unsupported"), std::string::npos) << text;
  EXPECT_NE(text.find("not supported by gloo: reduce-scatter: not implemented"), std::string::npos) << text;
  r.rows[0].wrong = 3;
  EXPECT_FALSE(r.ok());
  EXPECT_NE(dist::render_comm_bench(r).find("3 wrong"), std::string::npos);
  const auto j = dist::comm_bench_to_json(r);
  EXPECT_FALSE(j.at("ok").get<bool>());
  EXPECT_FALSE(j.at("rows")[1].at("supported").get<bool>());
  EXPECT_EQ(j.at("rows")[1].at("note"), "not implemented");
}

TEST(InterfaceSelection, GlooExactNcclPrefixesEqualsAndCaret) {
  const std::vector<std::string> all = {"eth0", "eth1", "ib0", "lo"};
  auto g = dist::parse_interface_selection("GLOO_SOCKET_IFNAME", "eth,lo");
  EXPECT_EQ(g.names, (std::vector<std::string>{"eth", "lo"}));
  EXPECT_TRUE(dist::interfaces_matching(g, "eth", all).empty());
  EXPECT_EQ(dist::interfaces_matching(g, "lo", all), (std::vector<std::string>{"lo"}));
  auto n = dist::parse_interface_selection("NCCL_SOCKET_IFNAME", "eth");
  EXPECT_EQ(dist::interfaces_matching(n, "eth", all), (std::vector<std::string>{"eth0", "eth1"}));
  auto e = dist::parse_interface_selection("NCCL_SOCKET_IFNAME", "=eth");
  EXPECT_TRUE(e.exact);
  EXPECT_TRUE(dist::interfaces_matching(e, "eth", all).empty());
  auto x = dist::parse_interface_selection("HCCL_SOCKET_IFNAME", "^docker,lo");
  EXPECT_TRUE(x.exclude);
  EXPECT_EQ(x.names, (std::vector<std::string>{"docker", "lo"}));
}

TEST(NetCheck, LoopbackResolvesRoutesAndIsLocal) {
  const auto ifs = dist::local_interfaces();
  const auto r = dist::resolve_host("localhost");
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(dist::is_local_address(r.address, ifs));
  const auto route = dist::route_to("127.0.0.1", 29500, ifs);
  ASSERT_TRUE(route.error.empty()) << route.error;
  EXPECT_EQ(route.local_address, "127.0.0.1");
  EXPECT_EQ(route.interface, "lo");
  EXPECT_TRUE(dist::on_link("127.1.2.3", "lo", ifs));
  EXPECT_FALSE(dist::is_local_address("192.0.2.200", {}));
  EXPECT_FALSE(dist::resolve_host("no-such-host.invalid").error.empty());
}

TEST(NetCheck, AProbeTellsRefusedFromAccepting) {
  // A port nobody listens on refuses at once; a listening port accepts.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  EXPECT_EQ(dist::probe_tcp("127.0.0.1", port, std::chrono::milliseconds(1000)).result, dist::Reachability::Refused);
  ASSERT_EQ(::listen(fd, 1), 0);
  EXPECT_EQ(dist::probe_tcp("127.0.0.1", port, std::chrono::milliseconds(1000)).result, dist::Reachability::Accepts);
  EXPECT_FALSE(dist::port_unavailable(port).empty()) << "a listening port is taken";
  ::close(fd);
}
