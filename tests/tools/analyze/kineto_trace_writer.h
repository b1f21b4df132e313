#pragma once
// Builds small Kineto-format traces in tests: the advisor's trigger/silent fixtures are written
// with it, so each scenario states its timeline in a few lines.
#include <sstream>
#include <string>
#include <vector>

namespace crosstrain::analyze::testing {

class KinetoTraceWriter {
 public:
  // Writes what torch 1.8's Kineto wrote instead of today's categories: operators, torch.optim's and
  // the profiler's record_function spans ("ProfilerStep#N", "Optimizer.step#SGD.step",
  // "enumerate(DataLoader)#...") all as "Operator", runtime calls as "Runtime", device work as
  // "Kernel" / "Memcpy", thread ids as strings ("1890023232", "stream 7"), as in pytorch/kineto's
  // tb_plugin samples of that time.
  KinetoTraceWriter& torch_1_8() {
    torch_1_8_ = true;
    return *this;
  }
  KinetoTraceWriter& compute_major(int major) {
    compute_major_ = major;
    return *this;
  }
  KinetoTraceWriter& step(const std::string& name, double ts, double dur) { return span("user_annotation", name, 1, ts, dur); }
  KinetoTraceWriter& annotation(const std::string& name, double ts, double dur) {
    return span("user_annotation", name, 1, ts, dur);
  }
  KinetoTraceWriter& op(const std::string& name, double ts, double dur, const std::string& dtypes = "") {
    return span("cpu_op", name, 1, ts, dur, dtypes.empty() ? "" : "\"Input type\": " + dtypes);
  }
  // A python_function span (torch.profiler's with_stack) on host thread `tid`.
  KinetoTraceWriter& python(const std::string& name, double ts, double dur, int tid = 1) {
    return span("python_function", name, 1, ts, dur, "", tid);
  }
  // An operator on another host thread (the autograd engine's, say).
  KinetoTraceWriter& op_on(int tid, const std::string& name, double ts, double dur) {
    return span("cpu_op", name, 1, ts, dur, "", tid);
  }
  // A flow event ("s" or "f") of category `cat` on host thread `tid`.
  KinetoTraceWriter& flow(const std::string& cat, char phase, int id, double ts, int tid = 1) {
    std::ostringstream e;
    e.precision(15);  // times of long steps keep their microseconds
    e << "{\"ph\": \"" << phase << "\", \"id\": " << id << ", \"pid\": 1, \"tid\": " << tid << ", \"ts\": " << ts
      << ", \"cat\": \"" << cat << "\", \"name\": \"" << cat << "\"}";
    events_.push_back(e.str());
    return *this;
  }
  // Kineto's "baseTimeNanoseconds": ts T (us) is (base + 1000 T) ns on the profiler's clock.
  KinetoTraceWriter& base_time_ns(long long ns) {
    base_time_ns_ = ns;
    return *this;
  }
  KinetoTraceWriter& runtime(const std::string& name, double ts, double dur, int tid = 1) {
    return span("cuda_runtime", name, 1, ts, dur, "\"correlation\": " + std::to_string(next_corr_++), tid);
  }
  // A runtime call at [rt_ts, rt_ts + rt_dur] launching device work at [k_ts, k_ts + k_dur].
  KinetoTraceWriter& launch(double rt_ts, double rt_dur, const std::string& kernel, double k_ts, double k_dur,
                            const std::string& cat = "kernel", int stream = 7, int host_tid = 1) {
    int corr = next_corr_++;
    std::string c = "\"correlation\": " + std::to_string(corr);
    span("cuda_runtime", "cudaLaunchKernel", 1, rt_ts, rt_dur, c, host_tid);
    return span(cat, kernel, 0, k_ts, k_dur, c, stream);
  }
  // A copy made by runtime call `call` (cudaMemcpyAsync, cudaMemcpy) at [rt_ts, rt_ts + rt_dur]: the
  // device's `copy` ("Memcpy HtoD (Pageable -> Device)") at [c_ts, c_ts + c_dur].
  KinetoTraceWriter& copy(const std::string& call, double rt_ts, double rt_dur, const std::string& copy, double c_ts,
                          double c_dur) {
    std::string c = "\"correlation\": " + std::to_string(next_corr_++);
    span("cuda_runtime", call, 1, rt_ts, rt_dur, c);
    return span("gpu_memcpy", copy, 0, c_ts, c_dur, c, 7);
  }

  // One runtime call starting several pieces of device work under its correlation id, as Kineto
  // records a CUDA/HIP graph launch: each kernel is (name, ts, dur).
  struct DeviceWork {
    std::string name;
    double ts, dur;
  };
  KinetoTraceWriter& graph_launch(const std::string& call, double rt_ts, double rt_dur,
                                  const std::vector<DeviceWork>& work, int stream = 7) {
    std::string c = "\"correlation\": " + std::to_string(next_corr_++);
    span("cuda_runtime", call, 1, rt_ts, rt_dur, c);
    for (const auto& w : work) span("kernel", w.name, 0, w.ts, w.dur, c, stream);
    return *this;
  }

  std::string json() const {
    std::ostringstream o;
    o << "{\"schemaVersion\": 1, \"deviceProperties\": [";
    if (compute_major_ > 0) o << "{\"id\": 0, \"name\": \"test GPU\", \"computeMajor\": " << compute_major_ << "}";
    o << "], ";
    if (base_time_ns_ >= 0) o << "\"baseTimeNanoseconds\": " << base_time_ns_ << ", ";
    o << "\"traceEvents\": [";
    for (size_t i = 0; i < events_.size(); ++i) o << (i ? ",\n" : "\n") << events_[i];
    o << "]}";
    return o.str();
  }

 private:
  KinetoTraceWriter& span(const std::string& cat, const std::string& name, int pid, double ts, double dur,
                          const std::string& args = "", int tid = 1) {
    std::ostringstream e;
    e.precision(15);
    e << "{\"ph\": \"X\", \"cat\": \"" << (torch_1_8_ ? old_category(cat) : cat) << "\", \"name\": \"" << name
      << "\", \"pid\": " << pid << ", \"tid\": ";
    if (torch_1_8_) e << "\"" << (pid == 0 ? "stream " : "") << tid << "\"";
    else e << tid;
    e << ", \"ts\": " << ts << ", \"dur\": " << dur << ", \"args\": {" << args << "}}";
    events_.push_back(e.str());
    return *this;
  }
  static std::string old_category(const std::string& cat) {
    if (cat == "cpu_op" || cat == "user_annotation") return "Operator";
    if (cat == "cuda_runtime") return "Runtime";
    if (cat == "kernel") return "Kernel";
    if (cat == "gpu_memcpy") return "Memcpy";
    if (cat == "gpu_memset") return "Memset";
    return cat;
  }
  std::vector<std::string> events_;
  bool torch_1_8_ = false;
  int compute_major_ = 0;
  long long base_time_ns_ = -1;
  int next_corr_ = 1;
};

}  // namespace crosstrain::analyze::testing
