#pragma once
// What names in a trace mean: which spans are device kernels, runtime calls or operators (by
// category, or for category-less formats by process name), which operator names are
// communication, host syncs or data loading, and the operator-type buckets of the summary.
// Matching is by documented substrings (docs/ANALYZE.md), case-insensitive where noted.
#include <string_view>
#include <vector>

#include "tools/analyze/trace.h"

namespace crosstrain::analyze {

enum class OpType { Conv, Matmul, Norm, Elementwise, Pooling, Copy, Communication, Optimizer, Other };
constexpr int kOpTypeCount = 9;
const char* op_type_name(OpType t);

// Buckets an operator or kernel name ("aten::addmm", "volta_sgemm_128x64_nn", "ncclKernel_AllReduce").
OpType op_type_of(std::string_view name);

bool is_communication_name(std::string_view name);   // NCCL/HCCL/gloo collectives, c10d ops
bool is_host_sync_name(std::string_view name);       // aten::item, synchronize calls ...
bool is_data_loading_name(std::string_view name);    // data_wait, DataLoader iterators
bool is_profiler_step_name(std::string_view name);   // "ProfilerStep#N"
// "float", "double" inputs, no half types: a matmul/conv that runs in fp32.
bool is_fp32_input(std::string_view dtypes_json);

// Everything the analysis asks about a name, computed once per interned string: a trace repeats
// the same few thousand names millions of times.
struct NameInfo {
  bool communication = false;
  bool host_sync = false;
  bool data_loading = false;
  bool profiler_step = false;
  bool memcpy = false;           // device activity named like a copy ("Memcpy HtoD", Ascend MEMCPY tasks)
  bool memset = false;
  bool fp32_input = false;       // when the string is an "Input type" list: see is_fp32_input
  OpType type = OpType::Other;
};

class NameInfoCache {
 public:
  explicit NameInfoCache(const StringTable& strings) : strings_(strings) {}
  const NameInfo& operator()(uint32_t id);

 private:
  const StringTable& strings_;
  std::vector<NameInfo> info_;
  std::vector<char> known_;
};

// Sets Span::kind for every span and Trace::format for array traces (legacy vs Ascend).
void classify_spans(Trace& trace);

}  // namespace crosstrain::analyze
