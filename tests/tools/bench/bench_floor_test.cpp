// A real (tiny) bench, fp32 then bf16: the floor it reports lies between the fixed state and the
// bf16 peak, and the fixed state is what the model's tensors hold.
#include <gtest/gtest.h>

#include <sstream>

#include "tools/bench/bench.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/memory_floor.h"
#include "tools/train/tiny_train_config.h"

using namespace crosstrain;

TEST(BenchFloor, ATinyBenchsFloorLiesBetweenTheFixedStateAndTheBf16Peak) {
  bench::BenchOptions o;
  o.base = crosstrain::testing::tiny_train_config(/*batch_size=*/2, /*steps=*/2, /*warmup_steps=*/1);
  o.model = "resnet18";
  o.image_size = 32;
  o.batch_size = 2;
  o.steps = 2;
  o.warmup_steps = 1;
  o.precisions = {"fp32", "bf16"};
  std::ostringstream sink;
  const auto runs = bench::run_bench(o, &sink);
  ASSERT_EQ(runs.size(), 2u);
  const int64_t weights = runs[1].parameters * 4;
  const auto& fixed = runs[1].fixed_state;
  EXPECT_EQ(fixed.parameters, weights);
  EXPECT_EQ(fixed.gradients, weights);
  EXPECT_EQ(fixed.optimizer, weights) << "SGD momentum: one buffer per parameter";
  EXPECT_GT(fixed.buffers, 0) << "batch-norm statistics";
  EXPECT_EQ(runs[0].fixed_state.total(), fixed.total()) << "the precision does not change the fixed state";

  const auto floor = bench::memory_floor(runs, 1);
  ASSERT_TRUE(floor);
  EXPECT_GT(floor->floor_bytes, fixed.total());
  EXPECT_LT(floor->floor_bytes, *runs[1].peak_memory_bytes);
  EXPECT_LT(floor->floor_bytes, *runs[0].peak_memory_bytes);
  EXPECT_GT(floor->of_floor(), 1.0);
  EXPECT_FALSE(bench::memory_floor(runs, 0));

  const auto j = bench::bench_to_json(runs);
  EXPECT_EQ(j["runs"][1]["memory_floor"]["floor_bytes"].get<int64_t>(), floor->floor_bytes);
  EXPECT_NE(bench::render_comparison(runs).find("peak / floor"), std::string::npos);
}
