#include "report/table.h"
#include "report/units.h"

#include <gtest/gtest.h>

using namespace crosstrain::report;

TEST(Table, AlignsColumnsAndRejectsRaggedRows) {
  Table t({"metric", "FP32", "AMP"});
  t.add_row({"throughput", "545.0", "1254.0"});
  t.add_row({"peak memory", "5.52 GiB", "2.86 GiB"});
  const std::string out = t.render();
  EXPECT_EQ(out,
            "metric           FP32       AMP\n"
            "-------------------------------\n"
            "throughput      545.0    1254.0\n"
            "peak memory  5.52 GiB  2.86 GiB\n");
  EXPECT_THROW(t.add_row({"only one"}), std::invalid_argument);
}

TEST(Units, FormatsAndSaysNaForMissing) {
  EXPECT_EQ(format_bytes(std::nullopt), "n/a");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(int64_t{5651} << 20), "5.52 GiB");
  EXPECT_EQ(format_change(545.0, 1254.0), "+130.1%");
  EXPECT_EQ(format_change(0.0, 1.0), "n/a");
  EXPECT_EQ(format_count(25557032), "25,557,032");
  EXPECT_EQ(format_percent(0.1234), "12.3%");
  EXPECT_EQ(format_ms(117.4), "117.4 ms");
}
