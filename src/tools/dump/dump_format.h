#pragma once
// The crosstrain dump format (documented in full in docs/DUMP_FORMAT.md): the vocabulary shared by
// the writer (C++ DumpWriter, python/dump_torch.py), the reader and the compare engine.
//
// A dump is a directory:
//   index.jsonl   line 1: header {"format":"crosstrain-dump","version":1,"mode":"stats"|"tensors",...}
//                 then one record per dumped tensor, in execution order (field "seq")
//   loss.jsonl    {"step":N,"loss":X} for every training step, dumped or not
//   tensors/      in tensors mode: step<N>/<seq>-<name>.npy, one array per record
//
// Record names are "<kind>/<module or parameter path>" ("forward/layer3.2.conv2",
// "param_grad/layer1.0.conv1.weight"); the loss and the loss scale are plainly "loss" and
// "loss_scale". A module called twice in one step gets "#1", "#2", ... on its later records.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace crosstrain::dump {

// Bump when a field changes meaning or goes away; readers refuse versions newer than theirs.
// Operator records (kinds op_forward/op_backward/op_optimizer, an "op" object) are additions: a
// reader that predates them reads them as kind "other" and compares them all the same.
constexpr int kDumpFormatVersion = 1;
constexpr const char* kDumpFormatName = "crosstrain-dump";
constexpr const char* kIndexFile = "index.jsonl";
constexpr const char* kLossFile = "loss.jsonl";
constexpr const char* kTensorDir = "tensors";
// Largest index.jsonl and loss log read (both are read whole): far above what a training run
// writes (a few hundred bytes per record), low enough that a hostile file cannot take the memory.
constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxLossLogBytes = uint64_t{1} << 30;

enum class DumpMode { Stats, Tensors };
std::string dump_mode_name(DumpMode m);
DumpMode parse_dump_mode(const std::string& s);  // "stats" | "tensors"; std::invalid_argument otherwise

// Element types a dump records. numpy has no bfloat16: such tensors are stored widened to float32
// (exact) and the index keeps "dtype":"bfloat16" next to "stored_dtype":"float32".
enum class DType { Float32, Float64, Float16, BFloat16, Int64, Int32, UInt8, Bool };
std::string dtype_name(DType t);                 // "float32", "bfloat16", ...
std::optional<DType> parse_dtype(const std::string& s);
size_t dtype_size(DType t);
// A compute precision as runs and users spell it: "fp32", "bf16", "amp_bf16", "float16", "half",
// "fp64", ... (case-insensitive); nullopt when none is recognised.
std::optional<DType> parse_precision(const std::string& s);
bool dtype_is_float(DType t);
// Digits of precision, used to pick the lower-precision side of a comparison.
int dtype_precision_rank(DType t);               // float64 > float32 > float16 > bfloat16 > integers

// What a record is. The kind is the prefix of the record name.
enum class RecordKind {
  Forward, GradOutput, ParamGrad, ParamGradUnscaled, Loss, LossScale,
  OpForward, OpBackward, OpOptimizer,  // one output of an aten operator (crosstrain run --dump-level op)
  Other
};
std::string record_kind_name(RecordKind k);      // "forward", "grad_output", ...
RecordKind parse_record_kind(const std::string& s);  // unknown strings map to Other
// Execution phase for "forward before backward" ordering: 0 forward, 1 backward, 2 after backward.
int record_kind_phase(RecordKind k);

// Statistics of one tensor. max/min/mean/norm are over finite elements only and are absent when
// there is none; NaN and Inf are counted apart.
struct TensorStats {
  std::optional<double> max, min, mean, norm;
  int64_t nan_count = 0;
  int64_t inf_count = 0;
  int64_t numel = 0;
};
nlohmann::json stats_to_json(const TensorStats& s);

// Where an operator record comes from: the aten operator, the phase it ran in, the module path and
// the source lines (innermost frame outside torch, and the user's own file when that differs).
struct OpOrigin {
  std::string op;          // schema name, "aten::bmm"
  std::string overload;    // "default", "Tensor", ...
  std::string phase;       // forward | backward | optimizer
  std::string module;      // "transformer.h.1.attn", "" outside every module
  std::string source, code;            // "model.py:84" and that line's text
  std::string user_source, user_code;  // the user's file, when source is in a library
  bool random = false;     // a seeded random operator (dropout, ...): devices' generators differ
  // Provenance of the inputs, for the noise model of compare (noise_model.h): the records of the
  // same step whose output tensors the inputs are (op.inputs[].from), and, in tensors mode, the
  // files its tensor arguments were saved to (op.args[].value.tensor: a recorded output used again
  // unchanged names that record's file).
  std::vector<std::string> input_records;
  std::vector<std::string> input_files;
};

struct DumpRecord {
  int64_t seq = 0;                // execution order over the whole dump
  int64_t step = 0;
  std::string name;               // "<kind>/<path>" or "loss" / "loss_scale"
  RecordKind kind = RecordKind::Other;
  DType dtype = DType::Float32;   // dtype of the tensor in the run
  DType stored_dtype = DType::Float32;  // dtype inside the .npy (differs for bfloat16)
  std::vector<int64_t> shape;
  TensorStats stats;
  std::string file;               // relative to the dump directory; empty in stats mode
  std::string device;             // where the tensor lived when not the CPU ("cuda:0"); optional
  // Operator records only. Held apart: a record without one (most) costs 16 bytes here, not the
  // 300 of an empty origin, which counts at millions of records per side.
  std::shared_ptr<const OpOrigin> op;
};
// An integer field read from a file: std::invalid_argument naming `what` unless `v` is an integer
// that fits int64 (a float such as 1e300 would otherwise be cast with undefined behaviour).
int64_t json_int64(const nlohmann::json& v, const std::string& what);

nlohmann::json record_to_json(const DumpRecord& r);
// std::invalid_argument naming the bad field; the reader of index.jsonl (record_parser.cpp) does the work.
DumpRecord record_from_json(const nlohmann::json& j);

std::string shape_to_string(const std::vector<int64_t>& shape);  // "[2, 3]"
// 1 for a 0-d tensor, 0 when any dimension is 0; std::invalid_argument for a negative dimension or
// a product beyond int64 (shapes come from files).
int64_t shape_numel(const std::vector<int64_t>& shape);

// Full record name for a kind and a module/parameter path: (Forward, "layer1.0") -> "forward/layer1.0";
// Loss and LossScale ignore the path.
std::string record_name(RecordKind kind, const std::string& path);

// Steps to dump, as given on a command line: "0-4,10,20-22" ("" = every step). Ranges are inclusive.
class StepSelection {
 public:
  static StepSelection parse(const std::string& text);  // std::invalid_argument on bad syntax
  bool all() const { return ranges_.empty(); }
  bool contains(int64_t step) const;

 private:
  std::vector<std::pair<int64_t, int64_t>> ranges_;
};

}  // namespace crosstrain::dump
