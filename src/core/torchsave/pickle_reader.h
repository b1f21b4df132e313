#pragma once
// The pickle programs torch.save() writes (data.pkl, protocol 2; the protocol 3-5 opcodes for
// strings, framing and memoisation are read too) run on a restricted machine, as Python's
// torch.load(weights_only=True) does: plain containers, numbers, strings, collections.OrderedDict
// (its attributes, such as a state dict's `_metadata`, are dropped), tensors rebuilt by
// torch._utils from typed storages, numpy arrays and scalars of numeric dtypes (which
// weights_only also allows, and which pickled datasets such as CIFAR's python version hold), and
// nothing else. Anything outside that set is refused with
// FormatError naming the opcode or global and its byte position; every length is checked against
// the input before it is read.
//
// With PickleOptions::opaque_objects, an instance of another class (the argparse.Namespace a
// training script saves under 'args') is read as an Object node naming its class instead of
// refusing the file: nothing is imported or called, its state is dropped, and the caller decides
// whether the value was needed (core/state_file.cpp refuses it only where a tensor is expected).
//
// The result is a graph of nodes (memo references share nodes, as Python objects are shared), with
// tensors described, not loaded: their storages are records of the file to be checked and read by
// the caller (torch_file.h).
//
// Memory and time are linear in the program, with less per value than Python's own objects: a
// node is 16 bytes; None, True, False, the empty tuple and the integers 0..65535 are one node each
// however often they occur; text, items and layouts live in side tables; nothing is copied per
// use (a memoised list used a million times is one list); at STOP, the text and items of values
// the root does not reach (the latin-1 text a bytes object was encoded from) are freed. A program
// read from a file (the legacy format) is read through a window, never whole.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/torchsave/byte_source.h"

namespace crosstrain::torchsave {

enum class DType : uint8_t {
  Float32, Float64, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt8, Bool, Complex64, Complex128
};
size_t dtype_size(DType t);
const char* dtype_name(DType t);  // torch's names: "float32", "int64", ...

// Array: a numpy array (dtype, sizes; C order unless Fortran; its bytes).
// NumpyDtype: a numpy.dtype while the pickle is read (never a value of the result).
// Object: an instance of a class outside the allowed set (opaque_objects only).
enum class NodeKind : uint8_t {
  None, Bool, Int, Float, String, List, Tuple, Dict, Global, Storage, Tensor, Array, NumpyDtype, Object
};

struct Node {
  NodeKind kind = NodeKind::None;
  DType dtype = DType::Float32;  // Storage, Array, NumpyDtype
  // Global: a class outside the allowed set (opaque_objects only); Tensor: requires_grad;
  // Array: Fortran (column-major) order.
  bool flag = false;
  // Into the Pickle's side tables: String, Global, Object: texts ("module.name" for the last two);
  // List, Tuple, Dict: lists (a dict's as key, value, key, value, ...); Tensor: tensors;
  // Storage: storages; Array: arrays.
  uint32_t ref = 0;
  union {
    int64_t integer = 0;  // Bool (0 or 1), Int
    double real;          // Float
  };
};
static_assert(sizeof(Node) == 16, "a node stays small: programs hold millions");

struct TensorLayout {
  uint32_t storage = 0;  // its Storage node
  int64_t offset = 0;    // in elements
  std::vector<int64_t> sizes, strides;
};
struct StorageRef {
  std::string key;  // its record: "data/<key>" in a zip, the key in the legacy format
  int64_t numel = 0;
};
struct ArrayData {
  std::vector<int64_t> sizes;
  uint32_t bytes = 0;  // into texts
};

struct Pickle {
  std::vector<Node> nodes;
  uint32_t root = 0;
  size_t end = 0;  // bytes read, through STOP (the legacy format puts pickles one after another)
  std::vector<std::string> texts;
  std::vector<std::vector<uint32_t>> lists;
  std::vector<TensorLayout> tensors;
  std::vector<StorageRef> storages;
  std::vector<ArrayData> arrays;

  const Node& node(uint32_t i) const { return nodes[i]; }
  // Node i's text (String, Global, Object; a Storage's key; an Array's bytes), or "".
  std::string_view text(uint32_t i) const;
  // Node i's items (List, Tuple, Dict), or none.
  const std::vector<uint32_t>& items(uint32_t i) const;
  // Node i's layout; i must be a Tensor, Storage or Array node.
  const TensorLayout& tensor(uint32_t i) const { return tensors[nodes[i].ref]; }
  const StorageRef& storage(uint32_t i) const { return storages[nodes[i].ref]; }
  const ArrayData& array(uint32_t i) const { return arrays[nodes[i].ref]; }
};

struct PickleOptions {
  std::string name = "data.pkl";  // what errors call the program
  size_t origin = 0;               // added to the byte positions errors report (its place in the file)
  bool opaque_objects = false;     // see above; otherwise any other class is refused
  bool legacy_storages = false;    // persistent ids of the legacy format: 6 items, the last a view (None)
};

// FormatError ("data.pkl: unsupported global 'os.system' at byte 2") on anything else.
Pickle read_pickle(std::string_view program, const PickleOptions& options = {});
// The program that starts at byte `at` of `source` and ends at its STOP, read through a window
// (never whole); errors count bytes from the program's start, plus options.origin.
Pickle read_pickle(const ByteSource& source, uint64_t at, const PickleOptions& options = {});

}  // namespace crosstrain::torchsave
