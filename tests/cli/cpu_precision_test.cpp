// What the commands say about a precision this CPU emulates, through the binary. The CPU is
// presented with CROSSTRAIN_CPUINFO (tests/data/cpuinfo): an AVX2-only AMD EPYC, where bf16 is
// emulated, or an AVX512-BF16 Xeon, where it is native. The runs themselves compute on this
// machine's CPU, so these hold on any machine.
#include <nlohmann/json.hpp>

#include <fstream>

#include "test_support.h"

namespace ct = crosstrain::testing;

namespace {

const char* kTiny = " --device cpu --model resnet18 --small-stem --num-classes 10 --image-size 16 --batch-size 2"
                    " --steps 2 --warmup-steps 1 --threads 1 --no-progress";
const char* kAlignTiny = " --model resnet18 --small-stem --image-size 16 --batch-size 2 --num-classes 10 --steps 2"
                         " --threads 1 --no-progress";
const char* kNote = "bf16 is emulated on this CPU (avx2, no avx512_bf16 or amx_bf16 flag)";

std::string on_cpu(const std::string& cpuinfo) {
  return "CROSSTRAIN_CPUINFO=" + ct::source_dir() + "/tests/data/cpuinfo/" + cpuinfo + " " + ct::binary();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST(CpuPrecision, DoctorReportsCapabilityAndWhetherBf16IsNative) {
  auto r = ct::run_command(on_cpu("epyc_avx2.txt") + " doctor --python '' --json -", /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  const auto& cpu = j.at("cpu");
  EXPECT_EQ(cpu["model"], "AMD EPYC 7B13");
  EXPECT_EQ(cpu["simd"], "avx2");
  // libtorch's own view of this machine: its kernels' instruction set, whatever the file says.
  const std::string cap = cpu["capability"];
  EXPECT_TRUE(cap == "DEFAULT" || cap == "AVX2" || cap == "AVX512" || cap == "SVE256") << cap;
  EXPECT_EQ(cpu["bf16"]["native"], false);
  EXPECT_EQ(cpu["bf16"]["deciding_flags"], nlohmann::json({"avx512_bf16", "amx_bf16"}));
  EXPECT_EQ(cpu["fp16"]["native"], false);
  bool row = false;
  for (const auto& c : j["checks"])
    if (c["name"] == "bf16 on the CPU") {
      row = true;
      EXPECT_EQ(c["status"], "warn");
      EXPECT_EQ(c["value"], "emulated (avx2, no avx512_bf16 or amx_bf16)");
    }
  EXPECT_TRUE(row) << r.output;

  r = ct::run_command(on_cpu("xeon_avx512_bf16.txt") + " doctor --python ''");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("libtorch kernels: " + cap), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("native (avx512_bf16)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("emulated"), std::string::npos) << r.output;
}

// The note comes once, before the first step, and stays in the summary and the JSON.
TEST(CpuPrecision, TrainSaysEmulatedBf16BeforeRunning) {
  const auto dir = ct::scratch_dir("cpu_precision_train");
  auto r = ct::run_command(on_cpu("epyc_avx2.txt") + " train" + kTiny + " --precision bf16 --json " +
                           (dir / "a.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, std::string("note: ") + kNote), 1u) << r.output;
  EXPECT_LT(r.output.find(kNote), r.output.find("throughput")) << r.output;
  auto j = read_json(dir / "a.json");
  EXPECT_EQ(j["precision_native"], false);
  EXPECT_EQ(count(j["notes"].dump(), kNote), 1u) << j["notes"];

  r = ct::run_command(on_cpu("xeon_avx512_bf16.txt") + " train" + kTiny + " --precision bf16 --json " +
                      (dir / "b.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("emulated"), std::string::npos) << r.output;
  EXPECT_EQ(read_json(dir / "b.json")["precision_native"], true);
}

// bench keeps its default pair on such a CPU (fp32, then bf16), says the note before the first run
// and under the table, and lists the emulated precision in its JSON.
TEST(CpuPrecision, BenchDefaultPairKeepsBf16WithTheNote) {
  const auto dir = ct::scratch_dir("cpu_precision_bench");
  const auto json = (dir / "bench.json").string();
  auto r = ct::run_command(on_cpu("epyc_avx2.txt") + " bench" + kTiny + " --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, std::string("note: ") + kNote), 2u) << r.output;
  EXPECT_LT(r.output.find(kNote), r.output.find("[bench] fp32")) << r.output;
  EXPECT_GT(r.output.rfind(kNote), r.output.find("utilization")) << r.output;  // the table's footer
  auto j = read_json(json);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["precision"], "fp32");
  EXPECT_EQ(j["runs"][1]["precision"], "bf16");
  EXPECT_EQ(j["runs"][0]["precision_native"], true);
  EXPECT_EQ(j["runs"][1]["precision_native"], false);
  EXPECT_EQ(j["emulated_precisions"], nlohmann::json({"bf16"}));
  EXPECT_EQ(count(j["notes"].dump(), kNote), 1u) << j["notes"];
}

TEST(CpuPrecision, OpCheckAndAlignSayItBeforeRunning) {
  auto r = ct::run_command(on_cpu("epyc_avx2.txt") + " op-check --device cpu --precision bf16 --op relu --json -",
                           /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(nlohmann::json::parse(r.output)["emulation_note"].get<std::string>().find(kNote), std::string::npos);
  r = ct::run_command(on_cpu("epyc_avx2.txt") + " op-check --device cpu --precision bf16 --op relu");
  EXPECT_LT(r.output.find(std::string("note: ") + kNote), r.output.find("op-check on cpu")) << r.output;

  const auto dir = ct::scratch_dir("cpu_precision_align");
  r = ct::run_command(on_cpu("epyc_avx2.txt") + " align --a \"device=cpu precision=fp32\" --b \"device=cpu precision=bf16\""
                      " --out " + (dir / "out").string() + kAlignTiny);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, std::string("note: run B (device=cpu precision=bf16): ") + kNote), 1u) << r.output;
  EXPECT_EQ(count(r.output, kNote), 1u) << r.output;  // not again when B starts
  EXPECT_LT(r.output.find(kNote), r.output.find("align: running A")) << r.output;
}
