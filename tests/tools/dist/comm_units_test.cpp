// comm-bench's sizes, bus factors and report.
#include <gtest/gtest.h>

#include "tools/dist/comm_bench.h"

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
