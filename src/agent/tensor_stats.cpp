// The C interface of tensor_stats.h over the one implementation of the format's statistics,
// crosstrain::dump::compute_stats (the C++ dump writer's and compare's).
#include "agent/tensor_stats.h"

#include <cmath>
#include <limits>
#include <optional>

#include "tools/dump/tensor_stats.h"

namespace {

using crosstrain::dump::DType;

std::optional<DType> dump_dtype(int code) {
  switch (code) {
    case CROSSTRAIN_DTYPE_FLOAT32: return DType::Float32;
    case CROSSTRAIN_DTYPE_FLOAT64: return DType::Float64;
    case CROSSTRAIN_DTYPE_FLOAT16: return DType::Float16;
    case CROSSTRAIN_DTYPE_BFLOAT16: return DType::BFloat16;
    case CROSSTRAIN_DTYPE_INT64: return DType::Int64;
    case CROSSTRAIN_DTYPE_INT32: return DType::Int32;
    case CROSSTRAIN_DTYPE_UINT8: return DType::UInt8;
    case CROSSTRAIN_DTYPE_BOOL: return DType::Bool;
    default: return std::nullopt;
  }
}

}  // namespace

extern "C" int crosstrain_tensor_stats_version(void) { return 1; }

extern "C" int crosstrain_tensor_stats(const void* data, int64_t n, int dtype, double* out) {
  const auto type = dump_dtype(dtype);
  if (n < 1 || data == nullptr || out == nullptr || !type) return -1;
  const auto s = crosstrain::dump::compute_stats(*type, data, static_cast<size_t>(n));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int64_t finite = s.numel - s.nan_count - s.inf_count;
  out[0] = s.max.value_or(nan);
  out[1] = s.min.value_or(nan);
  out[2] = s.mean ? *s.mean * static_cast<double>(finite) : nan;  // the sum, as the agent keeps it
  out[3] = s.norm.value_or(nan);
  out[4] = static_cast<double>(s.nan_count);
  out[5] = static_cast<double>(s.inf_count);
  out[6] = static_cast<double>(finite);
  return 0;
}
