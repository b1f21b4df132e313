#pragma once
// Writes a crosstrain dump (docs/DUMP_FORMAT.md) from raw tensor memory, without libtorch, so the
// training loop, a test, or any C++ caller can record tensors the compare engine reads.
//
//   DumpWriter w;
//   w.open("dump/", DumpMode::Tensors);
//   for each step s:                               // every step
//     w.log_loss(s, loss);
//     if (dump this step) {                        // in execution order
//       w.write_tensor(s, "layer1.0.conv1", RecordKind::Forward, DType::Float32, {8, 64, 56, 56}, ptr);
//       ... grad_output, param_grad records ...
//       w.write_scalar(s, RecordKind::Loss, loss);
//     }
//   w.close();
//
// `data` is contiguous, C order, host memory of the given dtype (bfloat16/float16 as raw 16-bit
// words, bool as one byte per element); it is read during the call only. Statistics are computed in
// one pass; in tensors mode the array goes to an .npy file as well. Every record is flushed to the
// index as it is written, so a run that crashes still leaves a readable dump up to the crash.
// Thread-compatible: one writer must not be used from two threads at once (callers lock).
// Failures (unwritable directory, full disk) throw std::runtime_error; misuse throws
// std::invalid_argument or std::logic_error. Nothing aborts.
#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/dump/dump_format.h"

namespace crosstrain::dump {

struct DumpWriterOptions {
  std::string producer = "crosstrain";  // recorded in the index header
  nlohmann::json meta = nlohmann::json::object();  // free-form run description (model, device, ...)
  bool overwrite = false;               // replace an existing dump in the directory
};

class DumpWriter {
 public:
  DumpWriter() = default;
  ~DumpWriter();
  DumpWriter(const DumpWriter&) = delete;
  DumpWriter& operator=(const DumpWriter&) = delete;

  // Creates `dir` if needed. A directory already holding a dump is refused unless options.overwrite.
  void open(const std::string& dir, DumpMode mode, const DumpWriterOptions& options = {});
  bool is_open() const { return index_ != nullptr; }
  DumpMode mode() const { return mode_; }

  // `name` is the module or parameter path ("layer3.2.conv2"); the record is named
  // "<kind>/<name>" (a name that already carries that prefix is taken as is). A name repeated
  // within one step gets "#1", "#2", ... Returns the record as written (seq, final name, stats).
  const DumpRecord& write_tensor(int64_t step, const std::string& name, RecordKind kind, DType dtype,
                                 const std::vector<int64_t>& shape, const void* data);
  // A 0-d tensor holding `value` converted to `dtype` (float32, float64, float16 or bfloat16).
  const DumpRecord& write_scalar(int64_t step, RecordKind kind, double value, DType dtype = DType::Float32);
  // One line of loss.jsonl; call for every step, dumped or not.
  void log_loss(int64_t step, double loss);

  void close();
  int64_t records_written() const { return next_seq_; }

 private:
  std::string unique_name(int64_t step, const std::string& name);

  std::string dir_;
  DumpMode mode_ = DumpMode::Stats;
  FILE* index_ = nullptr;
  FILE* loss_ = nullptr;
  int64_t next_seq_ = 0;
  int64_t names_step_ = -1;
  std::map<std::string, int> names_seen_;  // in the current step
  DumpRecord last_;
};

// A loss value as JSON: a number, or "nan" / "inf" / "-inf" (JSON has no non-finite numbers).
nlohmann::json loss_to_json(double loss);
// Inverse of loss_to_json; also accepts null as NaN. std::invalid_argument otherwise.
double loss_from_json(const nlohmann::json& j);

}  // namespace crosstrain::dump
