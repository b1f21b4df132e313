// check_config: the request checked once, against the process group it will run in, before
// anything is opened.
#include "tools/train/checked_config.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

#include "tools/train/run_plan.h"
#include "tools/train/tiny_train_config.h"

using namespace crosstrain;
using namespace crosstrain::train;

namespace {

TrainConfig tiny() { return crosstrain::testing::tiny_train_config(/*batch_size=*/4, /*steps=*/3, /*warmup_steps=*/0); }

dist::WorkerEnv worker(int rank, int world_size) {
  dist::WorkerEnv env;
  env.rank = env.local_rank = rank;
  env.world_size = env.local_world_size = world_size;
  return env;
}

// The message of the std::invalid_argument `check` throws, "" when it throws none.
template <typename Check>
std::string refusal(Check check) {
  try {
    check();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(CheckedConfig, SyncBnWithoutAProcessGroupIsRefusedBeforeAnythingOpens) {
  TrainConfig c = tiny();
  c.sync_bn = true;
  EXPECT_EQ(refusal([&] { check_config(c, std::nullopt); }),
            "--sync-bn needs a process group: run under torchrun or crosstrain launch, or add --distributed");
  EXPECT_EQ(refusal([&] { check_config(c, worker(1, 2)); }), "");
  c.distributed = true;  // a group of one process, on a store of its own
  const CheckedConfig alone = check_config(c, std::nullopt);
  ASSERT_TRUE(alone.workers().has_value());
  EXPECT_EQ(alone.workers()->world_size, 1);
  EXPECT_EQ(alone.workers()->master_port, 0);
}

TEST(CheckedConfig, KeepLastIsRefusedOnMoreThanOneRank) {
  TrainConfig c = tiny();
  c.drop_last = false;
  EXPECT_EQ(refusal([&] { check_config(c, worker(0, 2)); }),
            "--keep-last cannot be used with more than one rank: every rank must take as many steps");
  EXPECT_EQ(refusal([&] { check_config(c, worker(0, 1)); }), "");
  EXPECT_EQ(refusal([&] { check_config(c, std::nullopt); }), "");
}

TEST(CheckedConfig, ThreadsBeyondTheMachineAreRefused) {
  const unsigned hardware = std::thread::hardware_concurrency();
  if (hardware == 0 || hardware >= limits::kMaxThreads) GTEST_SKIP() << "no count between the machine's and the limit";
  TrainConfig c = tiny();
  c.threads = static_cast<int>(hardware) + 1;
  EXPECT_NE(refusal([&] { check_config(c, std::nullopt); }).find("hardware threads of this machine"), std::string::npos);
}

// The run's rank and size are the group's, and each rank writes its own trace files in the one
// folder (DIR/cycle<k>/rank<r>.pt.trace.json, run --profile's layout); what was
// asked is kept as given, and the plan starts from the placed request.
TEST(CheckedConfig, PlacesTheRequestInItsProcessGroup) {
  TrainConfig c = tiny();
  c.profile.dir = "traces";
  const CheckedConfig checked = check_config(c, worker(2, 4));
  EXPECT_EQ(checked.config().rank, 2);
  EXPECT_EQ(checked.config().world_size, 4);
  EXPECT_TRUE(checked.config().distributed);
  EXPECT_EQ(checked.config().profile.dir, "traces");
  EXPECT_EQ(checked.config().profile.rank, 2);
  EXPECT_EQ(checked.requested().rank, 0);
  EXPECT_EQ(checked.requested().profile.dir, "traces");
  EXPECT_FALSE(checked.requested().distributed);
  const RunPlan plan = resolve(checked, core::DeviceContext::open("cpu"));
  EXPECT_EQ(plan.asked.rank, 2);
  EXPECT_EQ(plan.resolved.world_size, 4);
  // A rank the group does not have is refused, with the flag's words.
  EXPECT_NE(refusal([&] { check_config(c, worker(4, 4)); }).find("--rank must be between 0 and 3"), std::string::npos);
}
