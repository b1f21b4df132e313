#pragma once
// Recorded operator arguments (the "args" list of an operator record, docs/DUMP_FORMAT.md) turned
// into a dispatcher stack for any aten schema, on either side of a replay:
//
//   InputCache cache(dump_dir);                        // each .npy loaded once, shared by calls
//   RecordedArgs a = decode_args(schema, op.args, cache);   // ArgumentError: why not replayable
//   torch::jit::Stack s = make_stack(schema, a, side);      // fresh tensors: in-place ops are safe
//   handle.callBoxed(s);
//
// decode_args checks every value against the schema's argument type (Tensor, Tensor?, Tensor[],
// Tensor?[], int, int[], SymInt, SymInt[], float, float[], bool, bool[], Scalar, ScalarType,
// Device, Layout, MemoryFormat, str, optionals) and fills what the record leaves out from the
// schema's defaults. A number given for a Tensor argument (Python's `x + 1`) becomes a wrapped
// number, as the Python binding makes it, so type promotion matches the run.
//
// make_stack places the values on one side: the target (the device under test, floating tensors and
// dtype arguments in the run's dtype or --precision's) or the float64 reference on the CPU (floating
// tensors rounded to the target's dtype first, then widened, so both sides start from the same
// values). With --precision, a tensor an earlier replayed call produced takes the dtype that call
// gave it on the target, as it would have in a run at that precision. Tensors recorded on the run's device type go to the side's device; tensors the run kept
// on the CPU (an optimizer's step counters on a CUDA run) stay there. Arguments that named the
// same file (one tensor passed twice) stay one tensor.
#include <ATen/ATen.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/stack.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace crosstrain::opcheck {

// An argument that cannot be replayed (its text is the reason shown to the user).
struct ArgumentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The dump's .npy inputs, each read once and kept while a later call still names it.
class InputCache {
 public:
  explicit InputCache(std::string dir) : dir_(std::move(dir)) {}
  void expect(const std::string& file) { ++uses_[file]; }  // one more use before the replay
  // The file as a CPU tensor in its stored dtype (bfloat16 arrives as float32). ArgumentError when
  // it cannot be read. The tensor is shared: callers copy before running anything on it.
  const at::Tensor& get(const std::string& file);
  void release(const std::string& file);                    // one use done; freed after the last
  int64_t loads() const { return loads_; }

 private:
  std::string dir_;
  std::unordered_map<std::string, int64_t> uses_;
  std::unordered_map<std::string, at::Tensor> tensors_;
  int64_t loads_ = 0;
};

// One recorded tensor: the stored array and what the run had.
struct RecordedTensor {
  at::Tensor stored;                     // CPU, stored dtype; undefined for a None in Tensor?[]
  at::ScalarType dtype = at::kFloat;     // dtype in the run
  std::string device = "cpu";            // device in the run
  std::string file;                      // the .npy it came from
  bool wrapped = false;                  // a Python number passed for a Tensor argument
};

// One schema argument's recorded value.
struct RecordedValue {
  enum class Kind { Value, Tensor, TensorList, OptionalTensorList, ScalarType, Device };
  Kind kind = Kind::Value;
  c10::IValue value;                     // Value, ScalarType (as int), Device (as recorded), None
  std::vector<RecordedTensor> tensors;   // Tensor (one), TensorList, OptionalTensorList
};

struct RecordedArgs {
  std::vector<RecordedValue> values;     // one per schema argument, in schema order
};

// ArgumentError when an argument is damaged, unsupported, missing without a default, or names
// an argument the schema does not have.
RecordedArgs decode_args(const c10::FunctionSchema& schema, const nlohmann::json& args, InputCache& cache);

// Where one side of a replay runs.
struct ReplaySide {
  c10::Device device{c10::kCPU};
  bool reference = false;                     // float64 on the CPU, from the target's rounded inputs
  std::optional<at::ScalarType> precision;    // --precision: the target's floating dtype
  std::string run_device_type = "cpu";        // tensors recorded on this device type ("cuda") go to `device`
  // --precision: the dtype the target gave a file when an earlier call produced it (a bfloat16
  // attention's float32 logsumexp stays float32 for its backward); others take `precision`.
  const std::unordered_map<std::string, at::ScalarType>* produced = nullptr;
};

torch::jit::Stack make_stack(const RecordedArgs& args, const ReplaySide& side);

// The floating dtype a recorded dtype takes on the target (the recorded one, or --precision's).
at::ScalarType target_dtype(at::ScalarType recorded, const std::optional<at::ScalarType>& precision);

// Python's dtype names ("float32", "bfloat16", "int64", "bool", ...); nullopt for others.
std::optional<at::ScalarType> parse_scalar_type(const std::string& name);
std::string scalar_type_name(at::ScalarType t);

}  // namespace crosstrain::opcheck
