#pragma once
// Whether this CPU computes in bf16 and fp16 natively, from the flags the kernel lists in
// /proc/cpuinfo. Without them libtorch and oneDNN still run autocast's reduced precisions, but
// emulated: converted to fp32 around every operation, several times slower than plain fp32
// (bench's ResNet-50 in bf16 ran at 0.3 img/s against 2.8 in fp32 on a 2-core AVX2 EPYC).
//
//   x86_64   bf16: avx512_bf16 or amx_bf16         fp16: avx512_fp16 or amx_fp16
//   aarch64  bf16: bf16                            fp16: fphp
//
// ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA) below the level that uses those instructions turns
// them off for oneDNN, so the precision counts as emulated then too.
//
// CROSSTRAIN_CPUINFO=PATH reads PATH instead of /proc/cpuinfo: tests present an AVX2-only CPU or
// an AVX512-BF16 one on any machine. Torch-free.
#include <set>
#include <string>
#include <vector>

namespace crosstrain::core {

struct NativeSupport {
  bool native = false;
  std::vector<std::string> deciding;  // the flags that would make it native, in the order above
  std::vector<std::string> present;   // those of them this CPU lists
  std::string capped_by;              // "ONEDNN_MAX_CPU_ISA=AVX2" when that setting turned them off
};

struct CpuFeatures {
  std::string source;                 // the file read ("/proc/cpuinfo", or CROSSTRAIN_CPUINFO's)
  std::string arch;                   // "x86_64", "aarch64", or "unknown" (no flags line found)
  std::string model;                  // "AMD EPYC 7B13"; empty when the file names none
  std::set<std::string> flags;        // the first CPU's flags (x86) or features (Arm)
  std::string simd;                   // the widest vector extension listed: "avx512f", "avx2", "sve2", "sve",
                                      // "asimd"; empty when none of them
  NativeSupport bf16, fp16;
};

// From the text of a /proc/cpuinfo; `onednn_max_isa` is ONEDNN_MAX_CPU_ISA's value ("" when unset).
CpuFeatures cpu_features_from_cpuinfo(const std::string& text, const std::string& source,
                                      const std::string& onednn_max_isa = "");

// This machine's: CROSSTRAIN_CPUINFO or /proc/cpuinfo, and the environment's ONEDNN_MAX_CPU_ISA.
// A file that cannot be read gives arch "unknown" and nothing native.
CpuFeatures read_cpu_features();

// "bf16" / "fp16" -> the matching support; nullptr for any other precision (fp32 is always native).
const NativeSupport* native_support(const CpuFeatures& cpu, const std::string& precision);

// One line for a run about to compute in `precision` ("bf16", "fp16") on this CPU when that
// precision is emulated here, e.g. "bf16 is emulated on this CPU (avx2, no avx512_bf16 or amx_bf16
// flag): expect it to run several times slower than fp32, not faster; fp32 is the faster choice
// here". Empty when it is native, when the precision is not a reduced one, and on a CPU whose
// flags cannot tell (an unknown architecture, an unreadable file).
std::string emulated_precision_note(const CpuFeatures& cpu, const std::string& precision);

}  // namespace crosstrain::core
