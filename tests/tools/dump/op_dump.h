#pragma once
// Operator-level stats dumps as the agent of `crosstrain run` writes them (docs/DUMP_FORMAT.md,
// "Operator records"), built record by record for tests: each record's statistics come from its
// values, and an operator record may name the records its inputs are (op.inputs[].from).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/dump/dump_format.h"
#include "tools/dump/element_decode.h"
#include "tools/dump/tensor_stats.h"

namespace crosstrain::testing {

class OpDump {
 public:
  explicit OpDump(nlohmann::json meta = nlohmann::json::object()) : meta_(std::move(meta)) {}

  // An operator record "op_<phase>/<module>/aten.<op>" (the name given whole), float32 unless said.
  OpDump& op(int64_t step, const std::string& name, const std::vector<float>& values,
             const std::vector<std::string>& from = {}, dump::DType dtype = dump::DType::Float32) {
    nlohmann::json j = base(step, name, values, dtype);
    const auto slash = name.find('/');
    const std::string phase = name.substr(3, slash - 3);
    j["kind"] = "op_" + phase;
    const auto last = name.rfind('/');
    std::string op = name.substr(last + 1);
    op = "aten::" + op.substr(op.find('.') + 1, op.find_first_of("#[") - op.find('.') - 1);
    nlohmann::json inputs = nlohmann::json::array();
    for (const auto& f : from) inputs.push_back({{"arg", "self"}, {"dtype", "float32"}, {"from", f}});
    j["op"] = {{"name", op},
               {"overload", "default"},
               {"phase", phase},
               {"module", last > slash ? name.substr(slash + 1, last - slash - 1) : ""},
               {"source", "model.py:" + std::to_string(10 + lines_.size())},
               {"code", "y = f(x)"},
               {"inputs", inputs}};
    lines_.push_back(std::move(j));
    return *this;
  }

  // A module-level record ("forward/fc", "param_grad/fc.weight", "loss").
  OpDump& record(int64_t step, const std::string& name, const std::vector<float>& values,
                 dump::DType dtype = dump::DType::Float32) {
    nlohmann::json j = base(step, name, values, dtype);
    j["kind"] = name.substr(0, name.find('/'));
    lines_.push_back(std::move(j));
    return *this;
  }

  void write(const std::string& dir) const {
    std::filesystem::create_directories(dir);
    std::ofstream out(dir + "/index.jsonl", std::ios::trunc);
    out << nlohmann::json{{"format", "crosstrain-dump"}, {"version", 1}, {"mode", "stats"},
                          {"producer", "crosstrain.start"}, {"meta", meta_}}.dump()
        << "\n";
    for (const auto& l : lines_) out << l.dump() << "\n";
  }

 private:
  nlohmann::json base(int64_t step, const std::string& name, const std::vector<float>& values, dump::DType dtype) {
    std::vector<uint16_t> half;
    const void* data = values.data();
    if (dtype == dump::DType::BFloat16) {  // rounded to bfloat16, as a bf16 run holds them
      for (float v : values) half.push_back(dump::float_to_bfloat16(v));
      data = half.data();
    }
    const auto stats = dump::compute_stats(dtype, data, values.size());
    return {{"seq", static_cast<int64_t>(lines_.size())},
            {"step", step},
            {"name", name},
            {"dtype", dump::dtype_name(dtype)},
            {"shape", {static_cast<int64_t>(values.size())}},
            {"stats", dump::stats_to_json(stats)}};
  }

  nlohmann::json meta_;
  std::vector<nlohmann::json> lines_;
};

// Deterministic values of a given RMS: a fixed pattern in [-1.7, 1.7] times `rms`.
inline std::vector<float> pattern(size_t n, double rms, unsigned salt = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(rms * (static_cast<double>((i * 37 + salt * 11) % 101) - 50.0) / 29.15);
  return v;
}

// `v` with each element moved by `ulps` float32 spacings of itself (alternating sign): the rounding
// noise another reduction order leaves.
inline std::vector<float> rounded_differently(std::vector<float> v, int ulps) {
  for (size_t i = 0; i < v.size(); ++i)
    for (int k = 0; k < ulps; ++k) v[i] = std::nextafter(v[i], (i % 2) ? INFINITY : -INFINITY);
  return v;
}

inline std::vector<float> scaled(std::vector<float> v, double f) {
  for (auto& x : v) x = static_cast<float>(x * f);
  return v;
}

}  // namespace crosstrain::testing
