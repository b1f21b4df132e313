#include "tools/train/train.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "tiny_train_config.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_report.h"
#include "tools/train/model_catalog.h"
#include "core/device.h"
#include "core/models.h"
#include "tools/train/train_report.h"

using namespace crosstrain::train;

namespace {

// A tiny run: small-stem ResNet-18 on 16 px images, a few steps, deterministic threads.
TrainConfig tiny() { return crosstrain::testing::tiny_train_config(/*batch_size=*/4, /*steps=*/4, /*warmup_steps=*/1); }

std::vector<double> losses(const TrainResult& r) {
  std::vector<double> out;
  for (const auto& s : r.steps) out.push_back(s.loss);
  return out;
}

}  // namespace

TEST(Train, SameSeedGivesIdenticalLosses) {
  auto a = run_training(check_config(tiny()));
  auto b = run_training(check_config(tiny()));
  EXPECT_EQ(losses(a), losses(b));
  auto other = tiny();
  other.seed = 1;
  EXPECT_NE(losses(run_training(check_config(other))), losses(a));
}

TEST(Train, LossGoesDownOnFixedData) {
  auto c = tiny();
  c.steps = 8;
  c.lr = 0.05;
  auto r = run_training(check_config(c));
  EXPECT_LT(r.steps.back().loss, r.steps.front().loss * 0.8);
}

TEST(Train, ReportsTimingMemoryAndCost) {
  auto r = run_training(check_config(tiny()));
  EXPECT_EQ(r.measured_steps, 3);
  EXPECT_GT(r.throughput_img_s, 0);
  EXPECT_GE(r.batch_time_ms_p90, r.batch_time_ms_median);
  ASSERT_TRUE(r.peak_memory_bytes.has_value());
  // At least the fp32 weights (11.2 M params) and their gradients were held at once.
  EXPECT_GT(*r.peak_memory_bytes, 2 * 4 * r.parameters);
  EXPECT_GT(r.gflops_per_image, 0);
  EXPECT_FALSE(r.final_loss_scale.has_value());  // fp32: no scaler
}

TEST(Train, InjectedOverflowIsSkippedAndLogged) {
  auto c = tiny();
  // bf16 keeps fp32's range, so the only overflow is the injected one (fp16 on a CPU is also slow).
  c.precision = "bf16";
  c.loss_scale = "dynamic";
  c.inject_inf_at_step = 2;
  c.scale_growth_interval = 2000;
  std::ostringstream messages;
  TrainHooks hooks;
  hooks.messages = &messages;
  auto r = run_training(check_config(c), hooks);
  EXPECT_EQ(r.skipped_steps, 1);
  EXPECT_TRUE(r.steps[2].skipped);
  EXPECT_FALSE(r.steps[1].skipped);
  EXPECT_EQ(*r.steps[1].loss_scale, 65536.0);
  EXPECT_EQ(*r.steps[2].loss_scale, 32768.0);
  EXPECT_NE(messages.str().find("Gradient overflow. Skipping step\nLoss scaler reducing loss scale to 32768.0\n"),
            std::string::npos)
      << messages.str();
}

TEST(Train, PortableScalerPathMatchesFusedPath) {
  auto c = tiny();
  c.precision = "bf16";
  c.loss_scale = "dynamic";
  c.inject_inf_at_step = 1;
  c.scaler_kernels = "fused";
  std::ostringstream sink;
  TrainHooks hooks;
  hooks.messages = &sink;
  auto fused = run_training(check_config(c), hooks);
  c.scaler_kernels = "portable";
  auto portable = run_training(check_config(c), hooks);
  EXPECT_TRUE(fused.fused_scaler);
  EXPECT_FALSE(portable.fused_scaler);
  EXPECT_EQ(losses(fused), losses(portable));
  EXPECT_EQ(portable.skipped_steps, 1);
}

TEST(Train, NanLossInFp32StopsWithTheStep) {
  auto c = tiny();
  c.inject_inf_at_step = 1;  // no scaler: the weights become inf, the next loss NaN
  try {
    run_training(check_config(c));
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("at step 2"), std::string::npos) << e.what();
  }
}

TEST(Train, RejectsBadConfigurations) {
  auto c = tiny();
  c.precision = "tf32";  // CUDA-only math mode
  EXPECT_THROW(run_training(check_config(c)), std::invalid_argument);
  c = tiny();
  c.warmup_steps = 4;
  EXPECT_THROW(run_training(check_config(c)), std::invalid_argument);
  c = tiny();
  c.model = "vgg16";
  EXPECT_THROW(run_training(check_config(c)), std::invalid_argument);
  c = tiny();
  c.device = "cuda:7";
  EXPECT_THROW(run_training(check_config(c)), std::invalid_argument);
  c = tiny();
  c.cpu_allocator = "jemalloc";
  EXPECT_THROW(run_training(check_config(c)), std::invalid_argument);
}

// A caller that opened the device hands it over: the run does not open the request's again.
TEST(Train, RunsOnTheDeviceTheCallerOpened) {
  const auto cpu = crosstrain::core::DeviceContext::open("cpu");
  auto c = tiny();
  c.steps = 2;
  c.device = "cuda:7";  // would not open here
  TrainHooks hooks;
  hooks.device = &cpu;
  const auto r = run_training(check_config(c), hooks);
  EXPECT_EQ(r.device, "cpu");
  EXPECT_EQ(r.steps.size(), 2u);
}

TEST(Train, CpuAllocatorModesGiveIdenticalLosses) {
  auto c = tiny();
  c.cpu_allocator = "system";
  auto a = run_training(check_config(c));
  c.cpu_allocator = "caching";
  auto b = run_training(check_config(c));
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) EXPECT_EQ(a.steps[i].loss, b.steps[i].loss) << "step " << i;
}

TEST(Train, WritesJsonLinesLog) {
  auto dir = crosstrain::testing::scratch_dir("trainlog");
  auto c = tiny();
  c.precision = "bf16";
  c.loss_scale = "dynamic";
  c.log_path = (dir / "log.jsonl").string();
  auto r = run_training(check_config(c));
  std::ifstream in(c.log_path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["step"], n);
    EXPECT_DOUBLE_EQ(j["loss"].get<double>(), r.steps[n].loss);
    EXPECT_TRUE(j["loss_scale"].is_number());
    EXPECT_TRUE(j.contains("lr") && j.contains("step_ms"));
    ++n;
  }
  EXPECT_EQ(n, 4);
}

TEST(Bench, RunsEachPrecisionAndComparesThem) {
  crosstrain::bench::BenchOptions o;
  o.base = tiny();
  o.model = "resnet18";
  o.image_size = 16;
  o.batch_size = 4;
  o.steps = 3;
  o.warmup_steps = 1;
  std::ostringstream sink;
  auto runs = crosstrain::bench::run_bench(o, &sink);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].precision, "fp32");
  EXPECT_EQ(runs[1].precision, "bf16");  // the CPU's mixed precision
  auto j = crosstrain::bench::bench_to_json(runs);
  for (const auto& run : j["runs"])
    for (const char* key : {"precision", "throughput_img_s", "batch_time_ms_median", "peak_memory_bytes", "first_step_ms"})
      EXPECT_TRUE(run.contains(key)) << key;
  EXPECT_GT(j["comparison"]["peak_memory_ratio"].get<double>(), 0.0);
  const std::string table = crosstrain::bench::render_comparison(runs);
  EXPECT_NE(table.find("FP32"), std::string::npos);
  EXPECT_NE(table.find("BF16"), std::string::npos);
  EXPECT_NE(table.find("throughput (img/s)"), std::string::npos);
}

// Every precision is checked before the first run starts: a bad second one costs no run.
TEST(Bench, ABadPrecisionIsRefusedBeforeAnyRun) {
  crosstrain::bench::BenchOptions o;
  o.base = tiny();
  o.model = "resnet18";
  o.steps = 2;
  o.warmup_steps = 1;
  for (const char* bad : {"fp99", "tf32"}) {  // not a precision; CUDA-only math
    o.precisions = {"fp32", bad};
    std::ostringstream sink;
    EXPECT_THROW(crosstrain::bench::run_bench(o, &sink), std::invalid_argument) << bad;
    EXPECT_EQ(sink.str().find("[bench]"), std::string::npos) << bad << ": " << sink.str();
  }
}

// The count a run checks its memory with is the count of the model it would build.
TEST(ModelCatalog, EstimatedParametersAreExact) {
  for (const auto& name : crosstrain::core::model_names())
    for (int64_t width : {16, 64})
      for (bool small_stem : {false, true}) {
        crosstrain::core::ModelOptions o;
        o.num_classes = 37;
        o.base_width = width;
        o.small_stem = small_stem;
        const auto model = crosstrain::core::create_model(name, o);
        EXPECT_EQ(estimate_parameters(name, 37, small_stem, width), crosstrain::core::parameter_count(*model))
            << name << " width " << width;
      }
}
