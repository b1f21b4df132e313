#pragma once
// `crosstrain doctor`: what this machine and build can do, and what is missing. Each finding has a
// status; a missing *required* part makes the report fail (exit 1 at the CLI).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "tools/doctor/check.h"

namespace crosstrain::doctor {

// The CPU as libtorch and the kernel see it: the instruction set libtorch's kernels were picked for
// (at::get_cpu_capability(): DEFAULT, AVX2, AVX512, ...; ATEN_CPU_CAPABILITY lowers it) and whether
// bf16 and fp16 are native, from the flags that decide it (core/cpu_features.h).
struct DoctorCpu {
  std::string capability;
  core::CpuFeatures features;
};

struct DoctorReport {
  DoctorCpu cpu;
  std::vector<DoctorCheck> checks;
  bool ok() const;       // no required check is Missing
};

struct DoctorOptions {
  std::string device = "auto";          // the device a run would use; it must work
  std::vector<std::string> backend_libs;
  std::string python;                   // interpreter for the optional Python references
  bool ascend = false;                  // check the Ascend stack (also done when one is detected)
  // --distributed: instead of the checks above, the job's connectivity (see run_distributed_doctor)
  bool distributed = false;
  double dist_timeout_s = 30;           // the rendezvous and every collective
  std::string dist_backend = "auto";    // as dist::Group picks (gloo on the CPU)
};

DoctorReport run_doctor(const DoctorOptions& options);
std::string render_doctor(const DoctorReport& report);
nlohmann::json doctor_to_json(const DoctorReport& report);

// `doctor --distributed`, run by every worker of a job (torchrun's variables; one process without
// them). Before any waiting: the launcher's variables, MASTER_ADDR resolves, the interface that
// routes to it, MASTER_PORT free on rank 0's host, *_SOCKET_IFNAME naming interfaces that exist and
// reach MASTER_ADDR. A rank that fails these stops there, at once. Then the rendezvous (what went
// wrong when it fails: nothing listening, no answer, no route), one all-reduce checked, a median of
// 20 one-element all-reduces per rank and a barrier. Every rank's findings reach rank 0's report.
struct DistributedRank {
  int rank = 0;
  std::string host;
  int64_t pid = 0;
  std::string interface, address;  // the ones that route to MASTER_ADDR
  std::string device;
  double latency_us = 0;           // median of the small all-reduces
  double latency_max_us = 0;
};

struct DistributedDoctorReport {
  int rank = 0;                    // this process's
  int world_size = 1;
  bool joined = false;             // the rendezvous succeeded
  std::string backend, store;      // "gloo", "127.0.0.1:29500"
  double rendezvous_s = 0;
  std::vector<DoctorCheck> checks; // this rank's, then (on rank 0) the other ranks' problems
  std::vector<DistributedRank> ranks;  // on rank 0, after a rendezvous
  // This rank's problems when it stopped before the rendezvous, for tell_rank0 (one line).
  std::string untold;
  bool ok() const;
};

DistributedDoctorReport run_distributed_doctor(const DoctorOptions& options);
// After the report is out: tells the ranks waiting in the rendezvous that this one will not come
// and why (report.untold), so rank 0 names it at once. Waits a few seconds at most for rank 0's
// store; true when told.
bool tell_rank0(const DistributedDoctorReport& report, const DoctorOptions& options);
std::string render_distributed_doctor(const DistributedDoctorReport& report);
nlohmann::json distributed_doctor_to_json(const DistributedDoctorReport& report);

}  // namespace crosstrain::doctor
