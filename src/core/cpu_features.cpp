#include "core/cpu_features.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace crosstrain::core {

namespace {

// One flag that makes a precision native, and the oneDNN ISA level that uses it.
struct Decider {
  const char* flag;
  const char* onednn_level;  // nullptr: not an x86 flag oneDNN's ISA setting caps
};

const std::vector<Decider>& deciders(const std::string& arch, const std::string& precision) {
  static const std::vector<Decider> x86_bf16 = {{"avx512_bf16", "avx512_core_bf16"}, {"amx_bf16", "avx512_core_amx"}};
  static const std::vector<Decider> x86_fp16 = {{"avx512_fp16", "avx512_core_fp16"}, {"amx_fp16", "avx512_core_amx_fp16"}};
  static const std::vector<Decider> arm_bf16 = {{"bf16", nullptr}};
  static const std::vector<Decider> arm_fp16 = {{"fphp", nullptr}};
  static const std::vector<Decider> none;
  if (arch == "x86_64") return precision == "bf16" ? x86_bf16 : x86_fp16;
  if (arch == "aarch64") return precision == "bf16" ? arm_bf16 : arm_fp16;
  return none;
}

// oneDNN's ISA levels in increasing order (aliases share a rank); -1 for a name it does not know,
// which oneDNN ignores too.
int onednn_level_rank(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::vector<std::vector<std::string>> levels = {
      {"sse41"}, {"avx"}, {"avx2"}, {"avx2_vnni"}, {"avx2_vnni_2"}, {"avx512_core"}, {"avx512_core_vnni"},
      {"avx512_core_bf16"}, {"avx10_1_512", "avx512_core_fp16"}, {"avx10_1_512_amx", "avx512_core_amx"},
      {"avx10_1_512_amx_fp16", "avx512_core_amx_fp16"}, {"avx10_2_512"}, {"avx10_2_512_amx_2"},
      {"all", "default"}};
  for (size_t i = 0; i < levels.size(); ++i)
    for (const auto& n : levels[i])
      if (n == name) return static_cast<int>(i);
  return -1;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

NativeSupport judge(const CpuFeatures& cpu, const std::string& precision, const std::string& onednn_max_isa) {
  NativeSupport s;
  const int cap = onednn_max_isa.empty() ? -1 : onednn_level_rank(onednn_max_isa);
  for (const auto& d : deciders(cpu.arch, precision)) {
    s.deciding.push_back(d.flag);
    if (!cpu.flags.count(d.flag)) continue;
    s.present.push_back(d.flag);
    if (cap >= 0 && d.onednn_level && onednn_level_rank(d.onednn_level) > cap) {
      s.capped_by = "ONEDNN_MAX_CPU_ISA=" + onednn_max_isa;
      continue;
    }
    s.native = true;
  }
  return s;
}

std::string joined(const std::vector<std::string>& words, const std::string& last_sep) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i)
    out += (i == 0 ? "" : i + 1 == words.size() ? last_sep : ", ") + words[i];
  return out;
}

}  // namespace

CpuFeatures cpu_features_from_cpuinfo(const std::string& text, const std::string& source,
                                      const std::string& onednn_max_isa) {
  CpuFeatures cpu;
  cpu.source = source;
  cpu.arch = "unknown";
  std::string implementer, part;
  std::istringstream lines(text);
  std::string line;
  bool have_flags = false;
  while (std::getline(lines, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "model name" && cpu.model.empty()) cpu.model = value;
    if (key == "CPU implementer" && implementer.empty()) implementer = value;
    if (key == "CPU part" && part.empty()) part = value;
    // Every processor repeats its flags; the first one's stand for the machine.
    if ((key == "flags" || key == "Features") && !have_flags) {
      have_flags = true;
      cpu.arch = key == "flags" ? "x86_64" : "aarch64";
      std::istringstream words(value);
      std::string w;
      while (words >> w) cpu.flags.insert(w);
    }
  }
  if (cpu.model.empty() && !implementer.empty())
    cpu.model = "Arm CPU implementer " + implementer + (part.empty() ? "" : ", part " + part);
  for (const char* widest_first : {"avx512f", "avx2", "avx", "sve2", "sve", "asimd"})
    if (cpu.flags.count(widest_first)) {
      cpu.simd = widest_first;
      break;
    }
  cpu.bf16 = judge(cpu, "bf16", onednn_max_isa);
  cpu.fp16 = judge(cpu, "fp16", onednn_max_isa);
  return cpu;
}

CpuFeatures read_cpu_features() {
  const char* override_path = std::getenv("CROSSTRAIN_CPUINFO");
  const std::string path = override_path && *override_path ? override_path : "/proc/cpuinfo";
  std::ifstream in(path);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!isa || !*isa) isa = std::getenv("DNNL_MAX_CPU_ISA");
  return cpu_features_from_cpuinfo(text.str(), path, isa ? isa : "");
}

const NativeSupport* native_support(const CpuFeatures& cpu, const std::string& precision) {
  if (precision == "bf16") return &cpu.bf16;
  if (precision == "fp16") return &cpu.fp16;
  return nullptr;
}

std::string emulated_precision_note(const CpuFeatures& cpu, const std::string& precision) {
  const NativeSupport* s = native_support(cpu, precision);
  if (!s || s->native || s->deciding.empty()) return "";  // native, or a CPU whose flags cannot tell
  std::string why;
  if (!s->capped_by.empty())
    why = s->capped_by + " keeps oneDNN from its " + joined(s->present, " and ") + " instructions";
  else
    why = (cpu.simd.empty() ? cpu.arch : cpu.simd) + ", no " + joined(s->deciding, " or ") +
          " flag";
  // With AVX-512 oneDNN converts in wide registers and keeps close to fp32; below it, several times slower.
  const bool avx512 = cpu.flags.count("avx512f") && s->capped_by.empty();
  return precision + " is emulated on this CPU (" + why + "): expect it to run " +
         (avx512 ? "no faster than fp32, often slower" : "several times slower than fp32, not faster") +
         "; fp32 is the faster choice here";
}

}  // namespace crosstrain::core
