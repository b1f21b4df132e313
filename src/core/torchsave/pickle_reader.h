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
// The result is a graph of nodes in one arena (memo references share nodes, as Python objects are
// shared), with tensors described, not loaded: their storages are records of the zip to be checked
// and read by the caller (torch_file.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/torchsave/zip_archive.h"

namespace crosstrain::torchsave {

enum class DType { Float32, Float64, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt8, Bool, Complex64, Complex128 };
size_t dtype_size(DType t);
const char* dtype_name(DType t);  // torch's names: "float32", "int64", ...

// Array: a numpy array (dtype, sizes; C order unless `fortran`; its bytes in `text`).
// NumpyDtype: a numpy.dtype while the pickle is read (never a value of the result).
// Object: an instance of a class outside the allowed set (opaque_objects only).
enum class NodeKind { None, Bool, Int, Float, String, List, Tuple, Dict, Global, Storage, Tensor, Array, NumpyDtype,
                      Object };

struct Node {
  NodeKind kind = NodeKind::None;
  int64_t integer = 0;            // Bool, Int
  double real = 0;                // Float
  std::string text;               // String; Global, Object: "module.name"; Storage: its record key; Array: bytes
  std::vector<uint32_t> items;    // List, Tuple; Dict: key, value, key, value, ...
  DType dtype = DType::Float32;   // Storage, Array, NumpyDtype
  int64_t numel = 0;              // Storage: elements
  uint32_t storage = 0;           // Tensor: its Storage node
  int64_t offset = 0;             // Tensor: in elements
  std::vector<int64_t> sizes, strides;  // Tensor; Array: sizes
  bool requires_grad = false;
  bool fortran = false;           // Array in Fortran (column-major) order
  bool opaque = false;            // Global: a class outside the allowed set (opaque_objects only)
};

struct Pickle {
  std::vector<Node> nodes;
  uint32_t root = 0;
  size_t end = 0;  // bytes read, through STOP (the legacy format puts pickles one after another)
};

struct PickleOptions {
  std::string name = "data.pkl";  // what errors call the program
  size_t origin = 0;               // added to the byte positions errors report (its place in the file)
  bool opaque_objects = false;     // see above; otherwise any other class is refused
  bool legacy_storages = false;    // persistent ids of the legacy format: 6 items, the last a view (None)
};

// FormatError ("data.pkl: unsupported global 'os.system' at byte 2") on anything else.
Pickle read_pickle(std::string_view program, const PickleOptions& options = {});

}  // namespace crosstrain::torchsave
