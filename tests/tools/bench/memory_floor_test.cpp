// The memory floor's arithmetic, which runs it is computed for, and how the table and the JSON show
// it, on results made by hand (no training).
#include "tools/bench/memory_floor.h"

#include <gtest/gtest.h>

#include "tools/bench/bench_report.h"

using namespace crosstrain;
using crosstrain::bench::compute_floor;
using crosstrain::bench::memory_floor;

namespace {

constexpr int64_t kMiB = 1024 * 1024;

train::TrainResult result(const std::string& precision, std::optional<int64_t> peak) {
  train::TrainResult r;
  r.precision = precision;
  r.peak_memory_bytes = peak;
  r.fixed_state.parameters = 100 * kMiB;
  r.fixed_state.buffers = 1 * kMiB;
  r.fixed_state.gradients = 100 * kMiB;
  r.fixed_state.optimizer = 100 * kMiB;
  return r;
}

}  // namespace

TEST(MemoryFloor, SixteenBitTypesHalveWhatIsNotFixed) {
  EXPECT_EQ(bench::element_ratio("bf16"), 0.5);
  EXPECT_EQ(bench::element_ratio("fp16"), 0.5);
  EXPECT_EQ(bench::element_ratio("tf32"), 1.0);
  EXPECT_FALSE(bench::element_ratio("fp32"));
  EXPECT_FALSE(bench::element_ratio("int8"));
}

TEST(MemoryFloor, IsTheFixedStatePlusTheScaledRestOfTheFp32Peak) {
  const auto f = compute_floor("bf16", /*fp32 peak=*/1000, /*fixed=*/300, 0.5, /*measured=*/663);
  EXPECT_EQ(f.fp32_other_bytes, 700);
  EXPECT_EQ(f.floor_bytes, 300 + 350);
  EXPECT_DOUBLE_EQ(f.of_floor(), 663.0 / 650.0);
  EXPECT_EQ(f.precision, "bf16");
  const auto odd = compute_floor("bf16", 1001, 300, 0.5, 651);  // 350.5 rounds to the nearest byte
  EXPECT_EQ(odd.floor_bytes, 300 + 351);
  const auto tf32 = compute_floor("tf32", 1000, 300, 1.0, 1000);
  EXPECT_EQ(tf32.floor_bytes, 1000);
  EXPECT_DOUBLE_EQ(tf32.of_floor(), 1.0);
}

TEST(MemoryFloor, AFixedStateAboveTheFp32PeakLeavesNothingToHalve) {
  const auto f = compute_floor("fp16", 200, 300, 0.5, 320);
  EXPECT_EQ(f.fp32_other_bytes, 0);
  EXPECT_EQ(f.floor_bytes, 300);
  EXPECT_EQ(compute_floor("fp16", 0, 0, 0.5, 10).of_floor(), 0.0) << "no floor to divide by";
}

TEST(MemoryFloor, ComesFromTheFp32RunAndTheRunsOwnFixedState) {
  auto fp32 = result("fp32", 901 * kMiB);
  auto bf16 = result("bf16", 620 * kMiB);
  bf16.fixed_state.buffers = 2 * kMiB;  // the run's own count is used
  const std::vector<train::TrainResult> runs = {fp32, bf16};
  EXPECT_FALSE(memory_floor(runs, 0)) << "fp32 has no floor of its own";
  const auto f = memory_floor(runs, 1);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->fixed_state_bytes, 302 * kMiB);
  EXPECT_EQ(f->fp32_peak_bytes, 901 * kMiB);
  EXPECT_EQ(f->floor_bytes, 302 * kMiB + (901 - 302) * kMiB / 2);
  EXPECT_EQ(f->measured_bytes, 620 * kMiB);
  EXPECT_FALSE(memory_floor(runs, 2));
  // bf16 first, fp32 second: still found.
  EXPECT_TRUE(memory_floor({bf16, fp32}, 0));
}

TEST(MemoryFloor, NeedsAnFp32RunAndBothPeaks) {
  EXPECT_FALSE(memory_floor({result("bf16", 620 * kMiB)}, 0));
  EXPECT_FALSE(memory_floor({result("fp16", 620 * kMiB), result("bf16", 600 * kMiB)}, 1));
  EXPECT_FALSE(memory_floor({result("fp32", std::nullopt), result("bf16", 620 * kMiB)}, 1));
  EXPECT_FALSE(memory_floor({result("fp32", 900 * kMiB), result("bf16", std::nullopt)}, 1));
}

TEST(BenchReport, ShowsTheFixedStateTheFloorAndThePeakAgainstIt) {
  // fixed 301 MiB; floor 301 + (901 - 301) / 2 = 601 MiB; 631.05 / 601 = 1.05.
  const std::vector<train::TrainResult> runs = {result("fp32", 901 * kMiB), result("bf16", 631 * kMiB + 52429)};
  const std::string table = bench::render_comparison(runs);
  auto line_of = [&](const std::string& name) {
    const auto at = table.find(name);
    return at == std::string::npos ? std::string() : table.substr(at, table.find('\n', at) - at);
  };
  const std::string fixed = line_of("fixed state (weights, grads, optimizer)");
  EXPECT_NE(fixed.find("301.00 MiB"), std::string::npos) << table;
  EXPECT_NE(fixed.find("+0.0%"), std::string::npos) << table;
  const std::string floor = line_of("memory floor ");
  EXPECT_NE(floor.find("n/a"), std::string::npos) << "fp32's column\n" << table;
  EXPECT_NE(floor.find("601.00 MiB"), std::string::npos) << table;
  const std::string of = line_of("peak / floor");
  EXPECT_NE(of.find("1.05x"), std::string::npos) << table;
  EXPECT_NE(table.find("memory floor = fixed state + (FP32 peak - fixed state) x 2/4"), std::string::npos) << table;
  EXPECT_LT(table.find("peak memory"), table.find("memory floor ")) << "the floor sits under the peak";
}

TEST(BenchReport, SaysNothingAboutAFloorWithoutOne) {
  const std::string table = bench::render_comparison({result("fp32", 900 * kMiB)});
  EXPECT_NE(table.find("memory floor"), std::string::npos) << "the row is there, n/a";
  EXPECT_EQ(table.find("memory floor ="), std::string::npos) << table;
}

TEST(BenchReport, JsonCarriesEachRunsFloorAndFixedState) {
  const std::vector<train::TrainResult> runs = {result("fp32", 901 * kMiB), result("bf16", 631 * kMiB)};
  const auto j = bench::bench_to_json(runs);
  EXPECT_TRUE(j["runs"][0]["memory_floor"].is_null());
  const auto& f = j["runs"][1]["memory_floor"];
  EXPECT_EQ(f["floor_bytes"].get<int64_t>(), 601 * kMiB);
  EXPECT_EQ(f["fixed_state_bytes"].get<int64_t>(), 301 * kMiB);
  EXPECT_EQ(f["fp32_peak_bytes"].get<int64_t>(), 901 * kMiB);
  EXPECT_EQ(f["fp32_other_bytes"].get<int64_t>(), 600 * kMiB);
  EXPECT_EQ(f["peak_memory_bytes"].get<int64_t>(), 631 * kMiB);
  EXPECT_DOUBLE_EQ(f["element_ratio"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(f["of_floor"].get<double>(), 631.0 / 601.0);
  const auto& fixed = j["runs"][1]["fixed_state_bytes"];
  EXPECT_EQ(fixed["total"].get<int64_t>(), 301 * kMiB);
  EXPECT_EQ(fixed["buffers"].get<int64_t>(), 1 * kMiB);
  for (const char* k : {"parameters", "gradients", "optimizer"}) EXPECT_EQ(fixed[k].get<int64_t>(), 100 * kMiB) << k;
}
