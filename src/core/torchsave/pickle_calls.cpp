// The calls a pickle may make on the restricted machine (pickle_machine.h): nothing is imported or
// run; each allowed callable is checked and its value built here.
#include "core/torchsave/pickle_machine.h"

namespace crosstrain::torchsave::detail {
namespace {

const std::pair<const char*, DType> kStorages[] = {
    {"torch.FloatStorage", DType::Float32},     {"torch.DoubleStorage", DType::Float64},
    {"torch.HalfStorage", DType::Float16},      {"torch.BFloat16Storage", DType::BFloat16},
    {"torch.LongStorage", DType::Int64},        {"torch.IntStorage", DType::Int32},
    {"torch.ShortStorage", DType::Int16},       {"torch.CharStorage", DType::Int8},
    {"torch.ByteStorage", DType::UInt8},        {"torch.BoolStorage", DType::Bool},
    {"torch.ComplexFloatStorage", DType::Complex64}, {"torch.ComplexDoubleStorage", DType::Complex128}};
const char* const kCallables[] = {"collections.OrderedDict", "torch._utils._rebuild_tensor_v2",
                                  "torch._utils._rebuild_tensor", "torch._utils._rebuild_parameter",
                                  "_codecs.encode", "numpy.ndarray", "numpy.dtype",
                                  "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct",
                                  "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar",
                                  "numpy.core.numeric._frombuffer", "numpy._core.numeric._frombuffer"};

// numpy's dtype codes (kind + item size) of the dtypes a tensor can hold.
const std::pair<const char*, DType> kNumpyTypes[] = {
    {"f4", DType::Float32}, {"f8", DType::Float64}, {"f2", DType::Float16}, {"i8", DType::Int64},
    {"i4", DType::Int32},   {"i2", DType::Int16},   {"i1", DType::Int8},    {"u1", DType::UInt8},
    {"b1", DType::Bool},    {"c8", DType::Complex64}, {"c16", DType::Complex128}};

bool numpy_global(std::string_view name, const char* what) {
  return name == std::string("numpy.core.") + what || name == std::string("numpy._core.") + what;
}

// Python 3 pickles bytes at protocol 2 as _codecs.encode(text, "latin1"): the text is UTF-8 here,
// each code point below 256 one byte. False for a code point above 255.
bool latin1_bytes(std::string_view utf8, std::string& out) {
  size_t continuations = 0;
  for (char c : utf8) continuations += (static_cast<unsigned char>(c) & 0xC0) == 0x80;
  out.clear();
  out.reserve(utf8.size() - std::min(continuations, utf8.size()));
  for (size_t i = 0; i < utf8.size(); ++i) {
    const auto c = static_cast<unsigned char>(utf8[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if ((c == 0xc2 || c == 0xc3) && i + 1 < utf8.size()) {
      out.push_back(static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(utf8[++i]) & 0x3f)));
    } else {
      return false;
    }
  }
  return true;
}

const DType* storage_dtype(std::string_view global) {
  for (const auto& [name, dtype] : kStorages)
    if (global == name) return &dtype;
  return nullptr;
}

}  // namespace

void Machine::push_global(std::string name) {
  bool known = storage_dtype(name) != nullptr;
  for (const char* c : kCallables) known = known || name == c;
  if (!known && !o_.opaque_objects)
    fail("unsupported global '" + shown(name) + "' (only tensors, numbers, strings and containers are read)");
  const uint32_t g = add_text(NodeKind::Global, std::move(name));
  out_.nodes[g].flag = !known;
  push(g);
}

// An instance of an opaque class (REDUCE, NEWOBJ): its arguments are dropped, nothing is called.
bool Machine::push_opaque_object(uint32_t callable) {
  if (node(callable).kind != NodeKind::Global || !node(callable).flag) return false;
  Node n = node(callable);
  n.kind = NodeKind::Object;
  n.flag = false;
  push(add(n));  // shares the class's name
  return true;
}

// numpy.dtype("f4", False, True): the type code is checked here, the byte order by BUILD.
void Machine::numpy_dtype(const std::vector<uint32_t>& a) {
  if (a.empty()) fail("numpy.dtype without arguments");
  const std::string& code = expect_text(a[0], "a numpy type code");
  Node n;
  n.kind = NodeKind::NumpyDtype;
  bool known = false;
  for (const auto& [c, t] : kNumpyTypes)
    if (code == c) n.dtype = t, known = true;
  if (!known) fail("numpy dtype '" + shown(code) + "' (only numeric dtypes are read)");
  push(add(n));
}

// dtype state (version, byte order, ...): '<' and '|' (and '=' on this little-endian reader).
void Machine::build_numpy_dtype(uint32_t state) {
  if (node(state).kind != NodeKind::Tuple || items(state).size() < 2) fail("numpy dtype state that is not a tuple");
  const std::string& order = expect_text(items(state)[1], "a numpy byte order");
  if (order != "<" && order != "|" && order != "=") fail("big-endian numpy data ('" + shown(order) + "')");
}

// An Array node with no data yet (an empty 1-d array until BUILD gives it its state).
uint32_t Machine::add_array() {
  if (empty_text_ == kNoNode) {
    empty_text_ = next_ref(out_.texts);
    out_.texts.emplace_back();
  }
  ArrayData a;
  a.sizes = {0};
  a.bytes = empty_text_;
  Node n;
  n.kind = NodeKind::Array;
  n.dtype = DType::UInt8;
  n.ref = next_ref(out_.arrays);
  out_.arrays.push_back(std::move(a));
  return add(n);
}

// The array `arr` gets its dtype, shape and bytes (a String node's text, shared, not copied).
void Machine::set_array_data(uint32_t arr, uint32_t dtype, uint32_t sizes, uint32_t bytes) {
  const DType t = expect(dtype, NodeKind::NumpyDtype, "a numpy dtype").dtype;
  std::vector<int64_t> shape = dims(sizes, "array shape");
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d != 0 && count > (uint64_t{1} << 62) / static_cast<uint64_t>(d)) fail("array shape too large");
    count *= static_cast<uint64_t>(d);
  }
  const size_t have = text(bytes).size();
  if (count * dtype_size(t) != have)
    fail("numpy array of " + std::to_string(count) + " " + dtype_name(t) + " elements with " + std::to_string(have) +
         " bytes of data");
  out_.nodes[arr].dtype = t;
  ArrayData& a = out_.arrays[out_.nodes[arr].ref];
  a.sizes = std::move(shape);
  a.bytes = node(bytes).ref;
}

// ndarray.__setstate__((version, shape, dtype, is_fortran, data)).
void Machine::build_numpy_array(uint32_t arr, uint32_t state) {
  if (node(state).kind != NodeKind::Tuple || items(state).size() != 5) fail("numpy array state that is not a 5-tuple");
  const std::vector<uint32_t> s = items(state);
  out_.nodes[arr].flag = expect(s[3], NodeKind::Bool, "is_fortran as a bool").integer != 0;
  expect(s[4], NodeKind::String, "numpy array data as bytes (object arrays are not read)");
  set_array_data(arr, s[2], s[1], s[4]);
}

// numpy.core.multiarray.scalar(dtype, bytes): a number.
void Machine::numpy_scalar(const std::vector<uint32_t>& a) {
  if (a.size() != 2) fail("wrong number of arguments to a numpy scalar");
  const DType t = expect(a[0], NodeKind::NumpyDtype, "a numpy dtype").dtype;
  const std::string& b = expect_text(a[1], "numpy scalar bytes");
  if (b.size() != dtype_size(t))
    fail("numpy array of 1 " + std::string(dtype_name(t)) + " elements with " + std::to_string(b.size()) +
         " bytes of data");
  Node n;
  auto load = [&](auto v) {
    std::memcpy(&v, b.data(), sizeof v);
    return v;
  };
  switch (t) {
    case DType::Float32: n.kind = NodeKind::Float, n.real = load(float{}); break;
    case DType::Float64: n.kind = NodeKind::Float, n.real = load(double{}); break;
    case DType::Int64: n.kind = NodeKind::Int, n.integer = load(int64_t{}); break;
    case DType::Int32: n.kind = NodeKind::Int, n.integer = load(int32_t{}); break;
    case DType::Int16: n.kind = NodeKind::Int, n.integer = load(int16_t{}); break;
    case DType::Int8: n.kind = NodeKind::Int, n.integer = load(int8_t{}); break;
    case DType::UInt8: n.kind = NodeKind::Int, n.integer = static_cast<unsigned char>(b[0]); break;
    case DType::Bool: n.kind = NodeKind::Bool, n.integer = b[0] != 0; break;
    default: fail(std::string("numpy scalar of ") + dtype_name(t));
  }
  push(add(n));
}

void Machine::rebuild_tensor(const std::string& name, const std::vector<uint32_t>& a) {
  const bool v2 = name == "torch._utils._rebuild_tensor_v2";
  if (a.size() < (v2 ? 5u : 4u) || a.size() > (v2 ? 7u : 4u)) fail("wrong number of arguments to " + name);
  expect(a[0], NodeKind::Storage, "a storage as a tensor's first argument");
  TensorLayout t;
  t.storage = a[0];
  t.offset = expect_count(a[1], "storage offset");
  t.sizes = dims(a[2], "tensor size");
  t.strides = dims(a[3], "tensor stride");
  if (t.sizes.size() != t.strides.size()) fail("tensor size and stride of different lengths");
  Node n;
  n.kind = NodeKind::Tensor;
  if (v2) n.flag = expect(a[4], NodeKind::Bool, "requires_grad as a bool").integer != 0;
  n.ref = next_ref(out_.tensors);
  out_.tensors.push_back(std::move(t));
  push(add(n));
}

void Machine::reduce() {
  const uint32_t args = pop(), fn = pop();
  if (push_opaque_object(fn)) return;
  expect(fn, NodeKind::Global, "a callable before REDUCE");
  const std::string name(text(fn));
  const std::vector<uint32_t> a = arguments(args, "an argument tuple for REDUCE");
  if (name == "_codecs.encode") {
    if (a.empty() || a.size() > 2) fail("wrong number of arguments to _codecs.encode");
    const std::string encoding = a.size() == 2 ? expect_text(a[1], "an encoding") : "utf-8";
    const std::string& text = expect_text(a[0], "text to encode");
    if (encoding == "latin1" || encoding == "latin-1") {
      std::string bytes;
      if (!latin1_bytes(text, bytes)) fail("_codecs.encode of text outside latin-1");
      push(add_text(NodeKind::String, std::move(bytes)));
    } else if (encoding == "utf-8" || encoding == "utf8") {
      push(a[0]);  // the same text: shared, not copied
    } else {
      fail("_codecs.encode to '" + shown(encoding) + "'");
    }
  } else if (name == "numpy.dtype") {
    numpy_dtype(a);
  } else if (numpy_global(name, "multiarray._reconstruct")) {
    if (a.empty() || node(a[0]).kind != NodeKind::Global || text(a[0]) != "numpy.ndarray")
      fail("numpy _reconstruct of a class other than numpy.ndarray");
    push(add_array());  // filled by BUILD
  } else if (numpy_global(name, "multiarray.scalar")) {
    numpy_scalar(a);
  } else if (numpy_global(name, "numeric._frombuffer")) {  // protocol 5: (buffer, dtype, shape, order)
    if (a.size() != 4) fail("wrong number of arguments to numpy _frombuffer");
    const bool fortran = expect_text(a[3], "an array order") == "F";
    expect(a[0], NodeKind::String, "numpy array data as bytes");
    const uint32_t arr = add_array();
    out_.nodes[arr].flag = fortran;
    set_array_data(arr, a[1], a[2], a[0]);
    push(arr);
  } else if (name == "collections.OrderedDict") {
    if (!a.empty()) fail("OrderedDict with arguments");
    push(add_container(NodeKind::Dict, {}));
  } else if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
    rebuild_tensor(name, a);
  } else if (name == "torch._utils._rebuild_parameter") {
    if (a.size() != 3) fail("wrong number of arguments to " + name);
    Node t = expect(a[0], NodeKind::Tensor, "a tensor inside a parameter");  // shares the layout
    t.flag = expect(a[1], NodeKind::Bool, "requires_grad as a bool").integer != 0;
    push(add(t));
  } else {
    fail("'" + shown(name) + "' cannot be called");
  }
}

void Machine::persistent_load() {
  const std::vector<uint32_t> a = arguments(pop(), "a tuple as persistent id");
  if (a.size() != (o_.legacy_storages ? 6u : 5u) || node(a[0]).kind != NodeKind::String || text(a[0]) != "storage")
    fail(o_.legacy_storages ? "persistent id other than ('storage', type, key, location, size, view)"
                            : "persistent id other than ('storage', type, key, location, size)");
  // A view of another storage (written by torch < 1.0 for storage slices) is not supported.
  if (o_.legacy_storages && node(a[5]).kind != NodeKind::None)
    fail("a storage view (torch < 1.0 wrote these for storage slices) is not supported");
  expect(a[1], NodeKind::Global, "a storage type");
  const DType* dtype = storage_dtype(text(a[1]));
  if (!dtype) fail("'" + shown(text(a[1])) + "' is not a storage type");
  StorageRef s;
  s.key = expect_text(a[2], "a storage key");
  expect(a[3], NodeKind::String, "a storage location");
  s.numel = expect_count(a[4], "storage size");
  Node n;
  n.kind = NodeKind::Storage;
  n.dtype = *dtype;
  n.ref = next_ref(out_.storages);
  out_.storages.push_back(std::move(s));
  push(add(n));
}

void Machine::build() {
  const uint32_t state = pop(), target = top();
  const NodeKind k = node(target).kind;
  if (k == NodeKind::Array) build_numpy_array(target, state);
  else if (k == NodeKind::NumpyDtype) build_numpy_dtype(state);
  // Otherwise the state is an OrderedDict's attributes (a state dict's _metadata) or an opaque
  // object's: not kept.
  else if (k != NodeKind::Object) expect(target, NodeKind::Dict, "a dict before BUILD (objects are not rebuilt)");
}

}  // namespace crosstrain::torchsave::detail
