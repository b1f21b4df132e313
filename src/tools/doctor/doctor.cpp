#include "tools/doctor/doctor.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/compat.h"
#include "core/device.h"
#include "report/output.h"
#include "report/table.h"
#include "report/units.h"
#include "tools/doctor/ascend/doctor_ascend.h"

namespace crosstrain::doctor {

namespace {

std::string status_name(CheckStatus s) {
  switch (s) {
    case CheckStatus::Ok: return "ok";
    case CheckStatus::Info: return "info";
    case CheckStatus::Warn: return "warn";
    case CheckStatus::Missing: return "missing";
  }
  return "?";
}

// "KEY=value" from at::show_config()'s build settings line, e.g. BLAS_INFO.
std::string config_value(const std::string& config, const std::string& key) {
  auto pos = config.find(key + "=");
  if (pos == std::string::npos) return "";
  pos += key.size() + 1;
  auto end = config.find_first_of(",\n", pos);
  return config.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

// The wheel links Kineto into libtorch_cpu without shipping its headers: look for its entry point.
bool kineto_linked() { return dlsym(RTLD_DEFAULT, "_ZN9libkineto3apiEv") != nullptr; }

bool command_succeeds(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

std::string listed(const std::vector<std::string>& words, const char* sep) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : sep) + w;
  return out;
}

// "native (avx512_bf16)" or "emulated (avx2, no avx512_bf16 or amx_bf16)".
DoctorCheck precision_check(const core::CpuFeatures& cpu, const std::string& precision) {
  const core::NativeSupport& s = *core::native_support(cpu, precision);
  DoctorCheck c;
  c.name = precision + " on the CPU";
  if (s.native) {
    c.value = "native (" + listed(s.present, ", ") + ")";
    c.status = CheckStatus::Ok;
    return c;
  }
  c.status = CheckStatus::Warn;
  if (!s.capped_by.empty())
    c.value = "emulated (" + s.capped_by + " turns off " + listed(s.present, ", ") + ")";
  else
    c.value = "emulated (" + (cpu.simd.empty() ? cpu.arch : cpu.simd) + ", no " + listed(s.deciding, " or ") + ")";
  c.hint = "autocast " + precision + " runs several times slower than fp32 here: train and bench in fp32 on this CPU";
  return c;
}

nlohmann::json support_json(const core::NativeSupport& s) {
  return {{"native", s.native}, {"flags", s.present}, {"deciding_flags", s.deciding},
          {"capped_by", s.capped_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.capped_by)}};
}

}  // namespace

bool DoctorReport::ok() const {
  for (const auto& c : checks)
    if (c.required && c.status == CheckStatus::Missing) return false;
  return true;
}

DoctorReport run_doctor(const DoctorOptions& o) {
  DoctorReport r;
  auto add = [&](std::string name, std::string value, CheckStatus s, bool required = false, std::string hint = "") {
    r.checks.push_back({std::move(name), std::move(value), s, required, std::move(hint)});
  };
  const std::string config = at::show_config();
  add("libtorch", core::compat::torch_version(), CheckStatus::Ok, true);
  r.cpu.capability = at::get_cpu_capability();
  r.cpu.features = core::read_cpu_features();
  const auto& cpu = r.cpu.features;
  add("CPU", (cpu.model.empty() ? cpu.arch : cpu.model) + (cpu.simd.empty() ? "" : ", " + cpu.simd) +
                 "; libtorch kernels: " + r.cpu.capability,
      CheckStatus::Info);
  if (cpu.arch != "unknown") {
    r.checks.push_back(precision_check(cpu, "bf16"));
    r.checks.push_back(precision_check(cpu, "fp16"));
  } else {
    add("bf16/fp16 on the CPU", "unknown: no CPU flags in " + cpu.source, CheckStatus::Info);
  }
  add("intra-op threads", std::to_string(at::get_num_threads()) + " (interop " + std::to_string(at::get_num_interop_threads()) + ")",
      CheckStatus::Info);

  std::string blas = config_value(config, "BLAS_INFO");
  if (blas.empty()) blas = at::globalContext().hasMKL() ? "mkl" : "unknown";
  const bool reference_blas = blas == "generic" || blas.find("reference") != std::string::npos || blas == "unknown";
  add("BLAS", blas, reference_blas ? CheckStatus::Warn : CheckStatus::Ok, false,
      reference_blas ? "a reference BLAS is 10-50x slower for fp32 matmul: use the PyPI torch wheel (MKL/OpenBLAS) "
                       "or install libopenblas0-pthread"
                     : "");
  std::string lapack = config_value(config, "LAPACK_INFO");
  add("LAPACK", lapack.empty() ? (at::globalContext().hasLAPACK() ? "yes" : "no") : lapack,
      at::globalContext().hasLAPACK() ? CheckStatus::Ok : CheckStatus::Info);
  add("oneDNN (MKLDNN)", at::globalContext().hasMKLDNN() ? "yes" : "no",
      at::globalContext().hasMKLDNN() ? CheckStatus::Ok : CheckStatus::Warn, false,
      at::globalContext().hasMKLDNN() ? "" : "CPU convolutions and bf16 are much slower without oneDNN");
  add("OpenMP", at::globalContext().hasOpenMP() ? "yes" : "no", CheckStatus::Info);
  const bool kineto = kineto_linked();
  add("Kineto profiler", kineto ? "yes" : "no", kineto ? CheckStatus::Ok : CheckStatus::Info, false,
      kineto ? "" : "profiles use the portable RecordFunction recorder");

  const bool cuda_build = at::detail::getCUDAHooks().hasCUDA() || config.find("USE_CUDA=ON") != std::string::npos ||
                          config.find("CUDA Runtime") != std::string::npos;
  const std::string cuda_runtime = config_value(config, "CUDA_VERSION");
  add("CUDA build", cuda_build ? "yes" + (cuda_runtime.empty() ? "" : " (CUDA " + cuda_runtime + ")") : "no",
      CheckStatus::Info);
  const auto n_cuda = torch::cuda::device_count();
  if (n_cuda > 0) {
    const std::string cudnn = config_value(config, "CUDNN_VERSION");
    add("cuDNN", cudnn.empty() ? (torch::cuda::cudnn_is_available() ? "yes" : "no") : cudnn,
        torch::cuda::cudnn_is_available() ? CheckStatus::Ok : CheckStatus::Warn);
    for (int i = 0; i < static_cast<int>(n_cuda); ++i) {
      auto d = core::DeviceContext::open("cuda:" + std::to_string(i));
      auto info = d.info();
      add(info.name, info.description + ", " + report::format_bytes(info.total_memory) + ", capability " + info.capability,
          CheckStatus::Ok);
    }
  } else {
    add("CUDA devices", "none", CheckStatus::Info, false, cuda_build ? "no GPU visible: runs use the CPU" : "");
  }

  try {
    core::load_backend_libraries(o.backend_libs);
    for (const auto& lib : o.backend_libs) add("backend library", lib, CheckStatus::Ok, true);
  } catch (const std::exception& e) {
    add("backend library", e.what(), CheckStatus::Missing, true, "check the path given to --backend-lib");
  }
  auto npu = ascend::AscendEnvironment::from_process(o.python, core::compat::torch_version());
  npu.required = o.ascend;
  for (const auto& lib : o.backend_libs)  // torch_npu's own: <package>/lib/libtorch_npu.so
    if (std::filesystem::path(lib).filename() == "libtorch_npu.so")
      npu.torch_npu_dir = std::filesystem::path(lib).parent_path().parent_path().string();
  if (o.ascend || ascend::ascend_detected(npu))
    for (auto& c : ascend::run_ascend_checks(npu)) r.checks.push_back(std::move(c));
  auto pu1 = core::privateuse1_backend_name();
  add("PrivateUse1 backend", pu1 ? *pu1 : "none registered", CheckStatus::Info);

  // The device a run would use must work: a small matmul checked against a float64 CPU reference.
  try {
    auto dev = core::DeviceContext::open(o.device);
    auto a = at::randn({64, 64}, at::kDouble), b = at::randn({64, 64}, at::kDouble);
    auto ref = at::mm(a, b);
    auto got = at::mm(a.to(dev.device(), at::kFloat), b.to(dev.device(), at::kFloat)).to(at::kCPU, at::kDouble);
    const double err = (got - ref).abs().max().item<double>();
    const bool good = err < 1e-3;
    add("device " + dev.name(), dev.info().description + ", matmul max error " + report::format_fixed(err, 7),
        good ? CheckStatus::Ok : CheckStatus::Missing, true, good ? "" : "results on this device are wrong");
  } catch (const std::exception& e) {
    std::string what = e.what();
    add("device " + o.device, what.substr(0, what.find('\n')), CheckStatus::Missing, true,
        "pick an available device with --device");
  }

  if (!o.python.empty()) {
    const bool tv = command_succeeds(o.python + " -c 'import torch, torchvision'");
    add("Python references (torch, torchvision)", tv ? o.python : "not importable", tv ? CheckStatus::Ok : CheckStatus::Info,
        false, tv ? "" : "run scripts/setup.sh to create .venv (needed by tests and benchmarks only)");
  }
  return r;
}

std::string render_doctor(const DoctorReport& report) {
  report::Table t({"check", "status", "found", "hint"});
  t.align(1, report::Align::Left).align(2, report::Align::Left).align(3, report::Align::Left);
  for (const auto& c : report.checks)
    t.add_row({c.name, status_name(c.status) + (c.required ? "*" : ""), c.value, c.hint});
  return t.render() + "(* required)  overall: " + (report.ok() ? "ok" : "FAILED: a required part is missing") + "\n";
}

nlohmann::json doctor_to_json(const DoctorReport& report) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : report.checks)
    checks.push_back({{"name", c.name}, {"value", c.value}, {"status", status_name(c.status)},
                      {"required", c.required}, {"hint", c.hint}});
  const auto& f = report.cpu.features;
  const nlohmann::json cpu = {{"model", f.model},
                              {"arch", f.arch},
                              {"simd", f.simd},
                              {"capability", report.cpu.capability},
                              {"cpuinfo", f.source},
                              {"bf16", support_json(f.bf16)},
                              {"fp16", support_json(f.fp16)}};
  return {{"schema_version", report::kJsonSchemaVersion}, {"kind", "doctor"}, {"ok", report.ok()}, {"cpu", cpu},
          {"checks", checks}};
}

}  // namespace crosstrain::doctor
