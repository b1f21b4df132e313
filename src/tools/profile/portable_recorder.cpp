#include "tools/profile/portable_recorder.h"

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ApproximateClock.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "report/output.h"

namespace crosstrain::profile {

namespace {

struct OpEvent {
  std::string name;
  bool user_scope;
  int64_t start_ns, end_ns;
  int64_t tid;
  int64_t seq_nr;
  uint64_t fwd_tid;
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::string> types;
};

struct MemEvent {
  int64_t ts_ns;
  int64_t tid;
  uintptr_t addr;
  int64_t bytes;
  int64_t total_allocated;
  int64_t total_reserved;
  int device_type;
  int device_index;
};

int64_t thread_id() {
  thread_local int64_t id = static_cast<int64_t>(::syscall(SYS_gettid));
  return id;
}

struct OpContext : at::ObserverContext {
  int64_t start_ns;
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::string> types;
};

}  // namespace

namespace {
// RecordFunction callbacks are plain function pointers: the active recorder's state lives here
// (one portable recording at a time per process).
std::atomic<PortableRecorder::State*> g_active{nullptr};
std::atomic<bool> g_record_shapes{true};
}  // namespace

struct PortableRecorder::State : c10::MemoryReportingInfoBase {
  std::mutex mu;
  std::vector<OpEvent> ops;
  std::vector<MemEvent> mems;
  bool memory = true;

  void reportMemoryUsage(void* ptr, int64_t alloc_size, size_t total_allocated, size_t total_reserved,
                         c10::Device device) override {
    std::lock_guard<std::mutex> g(mu);
    mems.push_back({c10::getTime(), thread_id(), reinterpret_cast<uintptr_t>(ptr), alloc_size,
                    static_cast<int64_t>(total_allocated), static_cast<int64_t>(total_reserved),
                    static_cast<int>(device.type()), device.has_index() ? device.index() : -1});
  }
  bool memoryProfilingEnabled() const override { return memory; }
};

PortableRecorder::PortableRecorder(bool record_shapes, bool profile_memory, std::string device)
    : state_(std::make_shared<State>()), record_shapes_(record_shapes), profile_memory_(profile_memory),
      device_(std::move(device)) {
  state_->memory = profile_memory;
}

PortableRecorder::~PortableRecorder() {
  if (running_) {
    at::removeCallback(callback_);
    if (profile_memory_) c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
    g_active = nullptr;
  }
}

void PortableRecorder::start() {
  if (running_) return;
  State* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, state_.get()))
    throw std::runtime_error("another portable profile is already recording");
  g_record_shapes = record_shapes_;
  auto on_start = [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
    auto ctx = std::make_unique<OpContext>();
    if (g_record_shapes.load(std::memory_order_relaxed) && fn.scope() != at::RecordScope::USER_SCOPE) {
      for (const auto& in : fn.inputs()) {
        if (in.isTensor() && in.toTensor().defined()) {
          const auto& t = in.toTensor();
          ctx->dims.emplace_back(t.sizes().begin(), t.sizes().end());
          ctx->types.emplace_back(c10::toString(t.scalar_type()));
        } else {
          ctx->dims.emplace_back();
          ctx->types.emplace_back(in.isScalar() ? "Scalar" : "");
        }
      }
    }
    ctx->start_ns = c10::getTime();
    return ctx;
  };
  auto on_end = [](const at::RecordFunction& fn, at::ObserverContext* raw) {
    State* st = g_active.load(std::memory_order_acquire);
    if (!st || !raw) return;
    auto* ctx = static_cast<OpContext*>(raw);
    OpEvent e{fn.name(), fn.scope() == at::RecordScope::USER_SCOPE, ctx->start_ns, c10::getTime(), thread_id(),
              fn.seqNr(), fn.forwardThreadId(), std::move(ctx->dims), std::move(ctx->types)};
    std::lock_guard<std::mutex> g(st->mu);
    st->ops.push_back(std::move(e));
  };
  at::RecordFunctionCallback cb(+on_start, +on_end);
  cb.needsInputs(record_shapes_);
  cb.scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE});
  callback_ = at::addGlobalCallback(cb);
  if (profile_memory_)
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                     std::static_pointer_cast<c10::DebugInfoBase>(state_));
  running_ = true;
}

size_t PortableRecorder::stop_and_write(const std::string& path) {
  if (!running_) throw std::logic_error("PortableRecorder: stop without start");
  at::removeCallback(callback_);
  if (profile_memory_) c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  g_active = nullptr;
  running_ = false;

  std::lock_guard<std::mutex> g(state_->mu);
  int64_t base = std::numeric_limits<int64_t>::max();
  for (const auto& e : state_->ops) base = std::min(base, e.start_ns);
  for (const auto& m : state_->mems) base = std::min(base, m.ts_ns);
  if (base == std::numeric_limits<int64_t>::max()) base = c10::getTime();
  const int64_t pid = ::getpid();
  auto us = [&](int64_t ns) { return static_cast<double>(ns - base) / 1000.0; };

  nlohmann::json events = nlohmann::json::array();
  int64_t external_id = 1;
  for (const auto& e : state_->ops) {
    nlohmann::json args = {{"External id", external_id++}};
    if (!e.user_scope) {
      if (e.seq_nr >= 0) args["Sequence number"] = e.seq_nr;
      if (e.fwd_tid != 0) args["Fwd thread id"] = e.fwd_tid;
      if (!e.dims.empty()) {
        args["Input Dims"] = e.dims;
        args["Input type"] = e.types;
      }
    }
    events.push_back({{"ph", "X"}, {"cat", e.user_scope ? "user_annotation" : "cpu_op"}, {"name", e.name},
                      {"pid", pid}, {"tid", e.tid}, {"ts", us(e.start_ns)}, {"dur", us(e.end_ns) - us(e.start_ns)},
                      {"args", args}});
  }
  for (const auto& m : state_->mems) {
    events.push_back({{"ph", "i"}, {"cat", "cpu_instant_event"}, {"s", "t"}, {"name", "[memory]"}, {"pid", pid},
                      {"tid", m.tid}, {"ts", us(m.ts_ns)},
                      {"args",
                       {{"Total Reserved", m.total_reserved}, {"Total Allocated", m.total_allocated},
                        {"Bytes", m.bytes}, {"Addr", m.addr}, {"Device Type", m.device_type},
                        {"Device Id", m.device_index}}}});
  }
  const size_t n = events.size();
  nlohmann::json doc = {{"schemaVersion", 1},
                        {"deviceProperties", nlohmann::json::array()},
                        {"crosstrain", {{"recorder", "portable"}, {"device", device_}}},
                        {"traceEvents", std::move(events)},
                        {"traceName", path},
                        {"displayTimeUnit", "ms"},
                        {"baseTimeNanoseconds", base}};
  report::write_file_atomic(path, doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  state_->ops.clear();
  state_->mems.clear();
  return n;
}

}  // namespace crosstrain::profile
