#include "tools/compare/noise_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "tools/dump/dump_reader.h"

namespace crosstrain::compare {

using dump::DType;
using dump::DumpIndex;
using dump::DumpRecord;
using dump::TensorStats;
using dump::dtype_is_float;
using dump::dtype_name;
using dump::shape_to_string;

namespace {

std::string step_key(int64_t step, const std::string& name) { return std::to_string(step) + '\x1f' + name; }

void append_bits(std::string& key, double v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  key.append(bytes, sizeof bytes);
}

// What makes two records the same tensor: the step, dtype, shape and every statistic, bit for bit.
std::string tensor_identity(const DumpRecord& r) {
  std::string key = std::to_string(r.step) + ':' + dtype_name(r.dtype) + ':' + shape_to_string(r.shape) + ':';
  for (const auto& v : {r.stats.max, r.stats.min, r.stats.mean, r.stats.norm}) {
    key += v ? '1' : '0';
    append_bits(key, v.value_or(0.0));
  }
  key += std::to_string(r.stats.nan_count) + ':' + std::to_string(r.stats.inf_count);
  return key;
}

// An input's contribution to the scale of an output of `numel_out` elements.
double input_contribution(const DumpRecord& in, int64_t numel_out) {
  const double ratio = static_cast<double>(std::max<int64_t>(1, in.stats.numel)) /
                       static_cast<double>(std::max<int64_t>(1, numel_out));
  return record_rms(in.stats) * std::sqrt(std::max(1.0, ratio));
}

}  // namespace

double record_rms(const TensorStats& s) {
  if (!s.norm) return 0.0;
  const int64_t finite = s.numel - s.nan_count - s.inf_count;
  return finite > 0 ? *s.norm / std::sqrt(static_cast<double>(finite)) : 0.0;
}

double machine_epsilon(DType t) {
  switch (t) {
    case DType::Float64: return 0x1p-52;
    case DType::Float32: return 0x1p-23;
    case DType::Float16: return 0x1p-10;
    case DType::BFloat16: return 0x1p-7;
    default: return 0.0;
  }
}

std::vector<double> input_scales(const DumpIndex& index) {
  const auto& recs = index.records;
  std::unordered_map<std::string, size_t> by_name, by_file;
  by_name.reserve(recs.size());
  for (size_t i = 0; i < recs.size(); ++i) {
    by_name.emplace(step_key(recs[i].step, recs[i].name), i);
    if (!recs[i].file.empty()) by_file.emplace(recs[i].file, i);
  }
  std::vector<double> scale(recs.size(), 0.0);
  std::unordered_map<std::string, size_t> latest_op;  // tensor identity -> operator record
  for (size_t i = 0; i < recs.size(); ++i) {
    const DumpRecord& r = recs[i];
    if (!r.op) {
      auto it = latest_op.find(tensor_identity(r));
      if (it != latest_op.end()) scale[i] = scale[it->second];
      continue;
    }
    // The smallest known input: inputs of one operator can be of different kinds (a convolution's
    // backward takes the gradient and the activation), and the output's rounding is that of the
    // terms it sums, whose size the smallest bounds from above (a bias gradient sums gradients).
    double s = 0.0;
    const auto take = [&](size_t j) {
      if (j == i || recs[j].step != r.step || !recs[j].stats.norm || !dtype_is_float(recs[j].dtype)) return;
      const double c = input_contribution(recs[j], r.stats.numel);
      if (c > 0 && (s == 0.0 || c < s)) s = c;
    };
    for (const auto& name : r.op->input_records) {
      auto it = by_name.find(step_key(r.step, name));
      if (it != by_name.end()) take(it->second);
    }
    for (const auto& file : r.op->input_files) {
      auto it = by_file.find(file);
      if (it != by_file.end()) take(it->second);
    }
    scale[i] = s;
    latest_op[tensor_identity(r)] = i;
  }
  return scale;
}

}  // namespace crosstrain::compare
