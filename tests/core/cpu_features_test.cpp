// Whether bf16 and fp16 are native, from real-format /proc/cpuinfo files of CPUs with and without
// them (tests/data/cpuinfo), and the note a run prints when its precision is emulated.
#include "core/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "test_support.h"

using crosstrain::core::cpu_features_from_cpuinfo;
using crosstrain::core::CpuFeatures;
using crosstrain::core::emulated_precision_note;

namespace {

std::string cpuinfo_path(const std::string& name) {
  return crosstrain::testing::source_dir() + "/tests/data/cpuinfo/" + name;
}

CpuFeatures cpu(const std::string& name, const std::string& onednn_max_isa = "") {
  const std::string text = crosstrain::testing::read_bytes(cpuinfo_path(name));
  EXPECT_FALSE(text.empty()) << name;
  return cpu_features_from_cpuinfo(text, name, onednn_max_isa);
}

using Names = std::vector<std::string>;

}  // namespace

TEST(CpuFeatures, Avx2EpycEmulatesBothAndSaysWhy) {
  const auto c = cpu("epyc_avx2.txt");
  EXPECT_EQ(c.arch, "x86_64");
  EXPECT_EQ(c.model, "AMD EPYC 7B13");
  EXPECT_EQ(c.simd, "avx2");
  EXPECT_FALSE(c.bf16.native);
  EXPECT_EQ(c.bf16.deciding, (Names{"avx512_bf16", "amx_bf16"}));
  EXPECT_TRUE(c.bf16.present.empty());
  EXPECT_FALSE(c.fp16.native);
  EXPECT_EQ(c.fp16.deciding, (Names{"avx512_fp16", "amx_fp16"}));
  const std::string note = emulated_precision_note(c, "bf16");
  EXPECT_EQ(note.rfind("bf16 is emulated on this CPU (avx2, no avx512_bf16 or amx_bf16 flag)", 0), 0u) << note;
  EXPECT_NE(note.find("several times slower than fp32"), std::string::npos) << note;
  EXPECT_EQ(note.find('\n'), std::string::npos);
  EXPECT_NE(emulated_precision_note(c, "fp16").find("no avx512_fp16 or amx_fp16 flag"), std::string::npos);
  EXPECT_EQ(emulated_precision_note(c, "fp32"), "");  // fp32 is never emulated
}

TEST(CpuFeatures, Avx512Bf16XeonIsNativeAndSaysNothing) {
  const auto c = cpu("xeon_avx512_bf16.txt");
  EXPECT_EQ(c.simd, "avx512f");
  EXPECT_TRUE(c.bf16.native);
  EXPECT_EQ(c.bf16.present, (Names{"avx512_bf16"}));
  EXPECT_TRUE(c.fp16.native);
  EXPECT_EQ(c.fp16.present, (Names{"avx512_fp16"}));
  EXPECT_EQ(emulated_precision_note(c, "bf16"), "");
  EXPECT_EQ(emulated_precision_note(c, "fp16"), "");
}

TEST(CpuFeatures, AmxXeonListsBothDecidingFlags) {
  const auto c = cpu("xeon_amx.txt");
  EXPECT_EQ(c.model, "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz");
  EXPECT_EQ(c.bf16.present, (Names{"avx512_bf16", "amx_bf16"}));
  EXPECT_TRUE(c.bf16.native);
}

// AVX-512 without its bf16 extension (Skylake, Cascade Lake): oneDNN converts in wide registers, so
// the note promises no gain rather than a several-fold loss.
TEST(CpuFeatures, Avx512WithoutBf16ExpectsNoGain) {
  std::string text = crosstrain::testing::read_bytes(cpuinfo_path("xeon_avx512_bf16.txt"));
  for (const std::string flag : {" avx512_bf16", " avx512_fp16"})
    for (size_t at; (at = text.find(flag)) != std::string::npos;) text.erase(at, flag.size());
  const auto c = cpu_features_from_cpuinfo(text, "skylake");
  EXPECT_FALSE(c.bf16.native);
  const std::string note = emulated_precision_note(c, "bf16");
  EXPECT_NE(note.find("(avx512f, no avx512_bf16 or amx_bf16 flag)"), std::string::npos) << note;
  EXPECT_NE(note.find("no faster than fp32"), std::string::npos) << note;
}

// ONEDNN_MAX_CPU_ISA below the level that uses a flag keeps oneDNN from it: emulated after all.
TEST(CpuFeatures, OnednnIsaCapTurnsNativeOff) {
  auto c = cpu("xeon_amx.txt", "AVX2");
  EXPECT_FALSE(c.bf16.native);
  EXPECT_FALSE(c.fp16.native);
  EXPECT_EQ(c.bf16.capped_by, "ONEDNN_MAX_CPU_ISA=AVX2");
  EXPECT_NE(emulated_precision_note(c, "bf16").find("ONEDNN_MAX_CPU_ISA=AVX2 keeps oneDNN from its avx512_bf16 and "
                                                    "amx_bf16 instructions"),
            std::string::npos);
  c = cpu("xeon_amx.txt", "avx512_core_bf16");  // bf16's AVX-512 level, below fp16's
  EXPECT_TRUE(c.bf16.native);
  EXPECT_FALSE(c.fp16.native);
  c = cpu("xeon_amx.txt", "AVX512_CORE_AMX");
  EXPECT_TRUE(c.bf16.native);
  EXPECT_TRUE(c.fp16.native);  // avx512_fp16 is below the AMX level
  c = cpu("xeon_amx.txt", "NOT_AN_ISA");  // oneDNN ignores a name it does not know
  EXPECT_TRUE(c.bf16.native);
}

TEST(CpuFeatures, ArmFeatures) {
  const auto v1 = cpu("graviton3_neoverse_v1.txt");
  EXPECT_EQ(v1.arch, "aarch64");
  EXPECT_EQ(v1.model, "Arm CPU implementer 0x41, part 0xd40");
  EXPECT_EQ(v1.simd, "sve");
  EXPECT_TRUE(v1.bf16.native);
  EXPECT_TRUE(v1.fp16.native);
  const auto n1 = cpu("graviton2_neoverse_n1.txt");
  EXPECT_FALSE(n1.bf16.native);
  EXPECT_TRUE(n1.fp16.native);
  EXPECT_EQ(emulated_precision_note(n1, "bf16").rfind("bf16 is emulated on this CPU (asimd, no bf16 flag)", 0), 0u);
  EXPECT_EQ(emulated_precision_note(n1, "fp16"), "");
}

// No flags line (another architecture, an unreadable file): nothing is claimed either way.
TEST(CpuFeatures, UnknownCpuSaysNothing) {
  const auto c = cpu_features_from_cpuinfo("processor\t: 0\ncpu\t\t: POWER9 (architected)\n", "power9");
  EXPECT_EQ(c.arch, "unknown");
  EXPECT_FALSE(c.bf16.native);
  EXPECT_TRUE(c.bf16.deciding.empty());
  EXPECT_EQ(emulated_precision_note(c, "bf16"), "");
}

TEST(CpuFeatures, CpuinfoOverrideIsRead) {
  ::setenv("CROSSTRAIN_CPUINFO", cpuinfo_path("epyc_avx2.txt").c_str(), 1);
  const auto c = crosstrain::core::read_cpu_features();
  ::unsetenv("CROSSTRAIN_CPUINFO");
  EXPECT_EQ(c.model, "AMD EPYC 7B13");
  EXPECT_EQ(c.source, cpuinfo_path("epyc_avx2.txt"));
  EXPECT_EQ(crosstrain::core::read_cpu_features().source, "/proc/cpuinfo");
}
