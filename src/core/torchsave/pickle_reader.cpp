#include "core/torchsave/pickle_reader.h"

#include <cstring>
#include <unordered_map>
#include <utility>

namespace crosstrain::torchsave {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float64: case DType::Int64: case DType::Complex64: return 8;
    case DType::Complex128: return 16;
    case DType::Float32: case DType::Int32: return 4;
    case DType::Float16: case DType::BFloat16: case DType::Int16: return 2;
    case DType::Int8: case DType::UInt8: case DType::Bool: return 1;
  }
  return 1;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int64: return "int64";
    case DType::Int32: return "int32";
    case DType::Int16: return "int16";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
  }
  return "?";
}

namespace {

constexpr size_t kMaxDims = 64;

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

bool numpy_global(const std::string& name, const char* what) {
  return name == std::string("numpy.core.") + what || name == std::string("numpy._core.") + what;
}

// Python 3 pickles bytes at protocol 2 as _codecs.encode(text, "latin1"): the text is UTF-8 here,
// each code point below 256 one byte. False for a code point above 255.
bool latin1_bytes(const std::string& utf8, std::string& out) {
  out.clear();
  out.reserve(utf8.size());
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

const DType* storage_dtype(const std::string& global) {
  for (const auto& [name, dtype] : kStorages)
    if (global == name) return &dtype;
  return nullptr;
}

class Machine {
 public:
  Machine(std::string_view p, const PickleOptions& o) : p_(p), o_(o) {}

  Pickle run() {
    while (pos_ < p_.size()) {
      op_at_ = pos_;
      const auto op = static_cast<unsigned char>(p_[pos_++]);
      if (op == '.') {
        if (stack_.empty()) fail("STOP with an empty stack");
        out_.root = stack_.back();
        out_.end = pos_;
        return std::move(out_);
      }
      step(op);
    }
    throw FormatError(o_.name + ": ends without STOP (truncated)");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(o_.name + ": " + what + " at byte " + std::to_string(o_.origin + op_at_));
  }
  std::string_view take(uint64_t n) {
    if (n > p_.size() - pos_) fail("argument runs past the end of the program");
    auto s = p_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  uint64_t uint_le(int n) {
    auto s = take(n);
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[i]);
    return v;
  }
  std::string_view line() {
    const size_t nl = p_.find('\n', pos_);
    if (nl == std::string_view::npos) fail("GLOBAL without its newline");
    auto s = p_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return s;
  }

  uint32_t add(Node n) {
    out_.nodes.push_back(std::move(n));
    return static_cast<uint32_t>(out_.nodes.size() - 1);
  }
  uint32_t add(NodeKind k) {
    Node n;
    n.kind = k;
    return add(std::move(n));
  }
  Node& node(uint32_t i) { return out_.nodes[i]; }
  uint32_t pop() {
    if (stack_.size() <= floor()) fail("pop from an empty stack");
    const uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  uint32_t top() {
    if (stack_.size() <= floor()) fail("empty stack");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<uint32_t> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    std::vector<uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  void push(uint32_t v) { stack_.push_back(v); }
  void push_int(int64_t v) {
    Node n;
    n.kind = NodeKind::Int;
    n.integer = v;
    push(add(std::move(n)));
  }
  void push_string(std::string_view s) {
    Node n;
    n.kind = NodeKind::String;
    n.text = std::string(s);
    push(add(std::move(n)));
  }
  void push_tuple(std::vector<uint32_t> items) {
    Node n;
    n.kind = NodeKind::Tuple;
    n.items = std::move(items);
    push(add(std::move(n)));
  }
  void memo_put(uint64_t key) { memo_[key] = top(); }
  void memo_get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("memo entry " + std::to_string(key) + " was never stored");
    push(it->second);
  }
  void push_global(std::string name) {
    bool known = storage_dtype(name) != nullptr;
    for (const char* c : kCallables) known = known || name == c;
    if (!known && !o_.opaque_objects)
      fail("unsupported global '" + name + "' (only tensors, numbers, strings and containers are read)");
    Node n;
    n.kind = NodeKind::Global;
    n.text = std::move(name);
    n.opaque = !known;
    push(add(std::move(n)));
  }
  // An instance of an opaque class (REDUCE, NEWOBJ): its arguments are dropped, nothing is called.
  bool push_opaque_object(uint32_t callable) {
    const Node& c = node(callable);
    if (c.kind != NodeKind::Global || !c.opaque) return false;
    Node n;
    n.kind = NodeKind::Object;
    n.text = c.text;
    push(add(std::move(n)));
    return true;
  }
  Node& expect(uint32_t i, NodeKind k, const char* what) {
    if (node(i).kind != k) fail(std::string("expected ") + what);
    return node(i);
  }
  int64_t expect_count(uint32_t i, const char* what) {
    const int64_t v = expect(i, NodeKind::Int, what).integer;
    if (v < 0) fail(std::string("negative ") + what);
    return v;
  }
  std::vector<int64_t> dims(uint32_t i, const char* what) {
    const Node& t = expect(i, NodeKind::Tuple, what);
    if (t.items.size() > kMaxDims) fail(std::string(what) + " with more than 64 dimensions");
    std::vector<int64_t> out;
    for (uint32_t d : t.items) out.push_back(expect_count(d, what));
    return out;
  }

  // numpy.dtype("f4", False, True): the type code is checked here, the byte order by BUILD.
  void numpy_dtype(const std::vector<uint32_t>& a) {
    if (a.empty()) fail("numpy.dtype without arguments");
    const std::string code = expect(a[0], NodeKind::String, "a numpy type code").text;
    Node n;
    n.kind = NodeKind::NumpyDtype;
    bool known = false;
    for (const auto& [c, t] : kNumpyTypes)
      if (code == c) n.dtype = t, known = true;
    if (!known) fail("numpy dtype '" + code + "' (only numeric dtypes are read)");
    push(add(std::move(n)));
  }
  // dtype state (version, byte order, ...): '<' and '|' (and '=' on this little-endian reader).
  void build_numpy_dtype(const Node& state) {
    if (state.kind != NodeKind::Tuple || state.items.size() < 2) fail("numpy dtype state that is not a tuple");
    const std::string order = expect(state.items[1], NodeKind::String, "a numpy byte order").text;
    if (order != "<" && order != "|" && order != "=") fail("big-endian numpy data ('" + order + "')");
  }
  void set_array_data(Node& arr, uint32_t dtype, uint32_t sizes, std::string bytes) {
    arr.dtype = expect(dtype, NodeKind::NumpyDtype, "a numpy dtype").dtype;
    arr.sizes = dims(sizes, "array shape");
    uint64_t count = 1;
    for (int64_t d : arr.sizes) {
      if (d != 0 && count > (uint64_t{1} << 62) / static_cast<uint64_t>(d)) fail("array shape too large");
      count *= static_cast<uint64_t>(d);
    }
    if (count * dtype_size(arr.dtype) != bytes.size())
      fail("numpy array of " + std::to_string(count) + " " + dtype_name(arr.dtype) + " elements with " +
           std::to_string(bytes.size()) + " bytes of data");
    arr.text = std::move(bytes);
  }
  // ndarray.__setstate__((version, shape, dtype, is_fortran, data)).
  void build_numpy_array(Node& arr, const Node& state) {
    if (state.kind != NodeKind::Tuple || state.items.size() != 5) fail("numpy array state that is not a 5-tuple");
    arr.fortran = expect(state.items[3], NodeKind::Bool, "is_fortran as a bool").integer != 0;
    set_array_data(arr, state.items[2], state.items[1],
                   expect(state.items[4], NodeKind::String, "numpy array data as bytes (object arrays are not read)").text);
  }
  // numpy.core.multiarray.scalar(dtype, bytes): a number.
  void numpy_scalar(const std::vector<uint32_t>& a) {
    if (a.size() != 2) fail("wrong number of arguments to a numpy scalar");
    const uint32_t no_dims = add(NodeKind::Tuple);  // before taking references into the arena
    Node arr;
    arr.kind = NodeKind::Array;
    set_array_data(arr, a[0], no_dims, expect(a[1], NodeKind::String, "numpy scalar bytes").text);
    Node n;
    const auto* b = reinterpret_cast<const unsigned char*>(arr.text.data());
    auto load = [&](auto v) {
      std::memcpy(&v, b, sizeof v);
      return v;
    };
    switch (arr.dtype) {
      case DType::Float32: n.kind = NodeKind::Float, n.real = load(float{}); break;
      case DType::Float64: n.kind = NodeKind::Float, n.real = load(double{}); break;
      case DType::Int64: n.kind = NodeKind::Int, n.integer = load(int64_t{}); break;
      case DType::Int32: n.kind = NodeKind::Int, n.integer = load(int32_t{}); break;
      case DType::Int16: n.kind = NodeKind::Int, n.integer = load(int16_t{}); break;
      case DType::Int8: n.kind = NodeKind::Int, n.integer = load(int8_t{}); break;
      case DType::UInt8: n.kind = NodeKind::Int, n.integer = b[0]; break;
      case DType::Bool: n.kind = NodeKind::Bool, n.integer = b[0] != 0; break;
      default: fail(std::string("numpy scalar of ") + dtype_name(arr.dtype));
    }
    push(add(std::move(n)));
  }

  void reduce() {
    const uint32_t args = pop(), fn = pop();
    if (push_opaque_object(fn)) return;
    const std::string name = expect(fn, NodeKind::Global, "a callable before REDUCE").text;
    const std::vector<uint32_t> a = expect(args, NodeKind::Tuple, "an argument tuple for REDUCE").items;
    if (name == "_codecs.encode") {
      if (a.empty() || a.size() > 2) fail("wrong number of arguments to _codecs.encode");
      const std::string encoding = a.size() == 2 ? expect(a[1], NodeKind::String, "an encoding").text : "utf-8";
      const std::string& text = expect(a[0], NodeKind::String, "text to encode").text;
      std::string bytes;
      if (encoding == "latin1" || encoding == "latin-1") {
        if (!latin1_bytes(text, bytes)) fail("_codecs.encode of text outside latin-1");
        push_string(bytes);
      } else if (encoding == "utf-8" || encoding == "utf8") push_string(text);
      else fail("_codecs.encode to '" + encoding + "'");
    } else if (name == "numpy.dtype") {
      numpy_dtype(a);
    } else if (numpy_global(name, "multiarray._reconstruct")) {
      if (a.empty() || node(a[0]).kind != NodeKind::Global || node(a[0]).text != "numpy.ndarray")
        fail("numpy _reconstruct of a class other than numpy.ndarray");
      push(add(NodeKind::Array));  // filled by BUILD
    } else if (numpy_global(name, "multiarray.scalar")) {
      numpy_scalar(a);
    } else if (numpy_global(name, "numeric._frombuffer")) {  // protocol 5: (buffer, dtype, shape, order)
      if (a.size() != 4) fail("wrong number of arguments to numpy _frombuffer");
      Node arr;
      arr.kind = NodeKind::Array;
      arr.fortran = expect(a[3], NodeKind::String, "an array order").text == "F";
      set_array_data(arr, a[1], a[2], expect(a[0], NodeKind::String, "numpy array data as bytes").text);
      push(add(std::move(arr)));
    } else if (name == "collections.OrderedDict") {
      if (!a.empty()) fail("OrderedDict with arguments");
      push(add(NodeKind::Dict));
    } else if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
      const bool v2 = name == "torch._utils._rebuild_tensor_v2";
      if (a.size() < (v2 ? 5u : 4u) || a.size() > (v2 ? 7u : 4u)) fail("wrong number of arguments to " + name);
      expect(a[0], NodeKind::Storage, "a storage as a tensor's first argument");
      Node t;
      t.kind = NodeKind::Tensor;
      t.storage = a[0];
      t.offset = expect_count(a[1], "storage offset");
      t.sizes = dims(a[2], "tensor size");
      t.strides = dims(a[3], "tensor stride");
      if (t.sizes.size() != t.strides.size()) fail("tensor size and stride of different lengths");
      if (v2) t.requires_grad = expect(a[4], NodeKind::Bool, "requires_grad as a bool").integer != 0;
      push(add(std::move(t)));
    } else if (name == "torch._utils._rebuild_parameter") {
      if (a.size() != 3) fail("wrong number of arguments to " + name);
      Node t = expect(a[0], NodeKind::Tensor, "a tensor inside a parameter");
      t.requires_grad = expect(a[1], NodeKind::Bool, "requires_grad as a bool").integer != 0;
      push(add(std::move(t)));
    } else {
      fail("'" + name + "' cannot be called");
    }
  }

  void persistent_load() {
    const Node& pid = expect(pop(), NodeKind::Tuple, "a tuple as persistent id");
    const std::vector<uint32_t> a = pid.items;
    if (a.size() != (o_.legacy_storages ? 6u : 5u) || node(a[0]).kind != NodeKind::String ||
        node(a[0]).text != "storage")
      fail(o_.legacy_storages ? "persistent id other than ('storage', type, key, location, size, view)"
                              : "persistent id other than ('storage', type, key, location, size)");
    // A view of another storage (written by torch < 1.0 for storage slices) is not supported.
    if (o_.legacy_storages && node(a[5]).kind != NodeKind::None)
      fail("a storage view (torch < 1.0 wrote these for storage slices) is not supported");
    const DType* dtype = storage_dtype(expect(a[1], NodeKind::Global, "a storage type").text);
    if (!dtype) fail("'" + node(a[1]).text + "' is not a storage type");
    Node s;
    s.kind = NodeKind::Storage;
    s.dtype = *dtype;
    s.text = expect(a[2], NodeKind::String, "a storage key").text;
    expect(a[3], NodeKind::String, "a storage location");
    s.numel = expect_count(a[4], "storage size");
    push(add(std::move(s)));
  }

  void step(unsigned char op) {
    switch (op) {
      case 0x80: take(1); break;                                        // PROTO
      case 0x95: take(8); break;                                        // FRAME
      case '(': marks_.push_back(stack_.size()); break;                 // MARK
      case ')': push_tuple({}); break;                                  // EMPTY_TUPLE
      case ']': push(add(NodeKind::List)); break;                       // EMPTY_LIST
      case '}': push(add(NodeKind::Dict)); break;                       // EMPTY_DICT
      case 'N': push(add(NodeKind::None)); break;                       // NONE
      case 0x88: case 0x89: {                                           // NEWTRUE, NEWFALSE
        Node n;
        n.kind = NodeKind::Bool;
        n.integer = op == 0x88;
        push(add(std::move(n)));
        break;
      }
      case 'K': push_int(static_cast<int64_t>(uint_le(1))); break;     // BININT1
      case 'M': push_int(static_cast<int64_t>(uint_le(2))); break;     // BININT2
      case 'J': push_int(static_cast<int32_t>(uint_le(4))); break;     // BININT
      case 0x8a: {                                                      // LONG1
        const uint64_t n = uint_le(1);
        if (n > 8) fail("integer wider than 64 bits");
        uint64_t v = n ? uint_le(static_cast<int>(n)) : 0;
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
        push_int(static_cast<int64_t>(v));
        break;
      }
      case 'G': {                                                       // BINFLOAT, big-endian
        auto s = take(8);
        uint64_t bits = 0;
        for (char c : s) bits = (bits << 8) | static_cast<unsigned char>(c);
        Node n;
        n.kind = NodeKind::Float;
        std::memcpy(&n.real, &bits, sizeof bits);
        push(add(std::move(n)));
        break;
      }
      case 'X': case 'T': push_string(take(uint_le(4))); break;        // BINUNICODE, BINSTRING
      case 0x8c: case 'U': push_string(take(uint_le(1))); break;       // SHORT_BINUNICODE/_BINSTRING
      case 0x8d: push_string(take(uint_le(8))); break;                  // BINUNICODE8
      case 'B': push_string(take(uint_le(4))); break;                   // BINBYTES
      case 'C': push_string(take(uint_le(1))); break;                   // SHORT_BINBYTES
      case 0x8e: case 0x96: push_string(take(uint_le(8))); break;       // BINBYTES8, BYTEARRAY8
      case 'q': memo_put(uint_le(1)); break;                            // BINPUT
      case 'r': memo_put(uint_le(4)); break;                            // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); break;                         // MEMOIZE
      case 'h': memo_get(uint_le(1)); break;                            // BINGET
      case 'j': memo_get(uint_le(4)); break;                            // LONG_BINGET
      case 't': push_tuple(pop_mark()); break;                          // TUPLE
      case 0x85: case 0x86: case 0x87: {                                // TUPLE1..3
        std::vector<uint32_t> items(op - 0x84);
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        push_tuple(std::move(items));
        break;
      }
      case 'a': {                                                       // APPEND
        const uint32_t v = pop();
        expect(top(), NodeKind::List, "a list before APPEND").items.push_back(v);
        break;
      }
      case 'e': {                                                       // APPENDS
        auto items = pop_mark();
        auto& l = expect(top(), NodeKind::List, "a list before APPENDS").items;
        l.insert(l.end(), items.begin(), items.end());
        break;
      }
      case 's': {                                                       // SETITEM
        const uint32_t v = pop(), k = pop();
        auto& d = expect(top(), NodeKind::Dict, "a dict before SETITEM").items;
        d.push_back(k);
        d.push_back(v);
        break;
      }
      case 'u': {                                                       // SETITEMS
        auto items = pop_mark();
        if (items.size() % 2) fail("SETITEMS with an odd number of items");
        auto& d = expect(top(), NodeKind::Dict, "a dict before SETITEMS").items;
        d.insert(d.end(), items.begin(), items.end());
        break;
      }
      case 'c': {                                                       // GLOBAL
        std::string module(line());
        push_global(module + "." + std::string(line()));
        break;
      }
      case 0x93: {                                                      // STACK_GLOBAL
        const uint32_t name = pop(), module = pop();
        push_global(expect(module, NodeKind::String, "a module name").text + "." +
                    expect(name, NodeKind::String, "a global name").text);
        break;
      }
      case 'R': reduce(); break;                                        // REDUCE
      case 0x81: case 0x92: {                                           // NEWOBJ, NEWOBJ_EX
        if (op == 0x92) pop();                                          // keyword arguments
        pop();                                                          // arguments
        const uint32_t cls = pop();
        if (!push_opaque_object(cls)) fail("objects are not rebuilt ('" + node(cls).text + "')");
        break;
      }
      case 'b': {                                                       // BUILD
        const uint32_t state = pop();
        Node& target = node(top());
        if (target.kind == NodeKind::Array) build_numpy_array(target, node(state));
        else if (target.kind == NodeKind::NumpyDtype) build_numpy_dtype(node(state));
        // Otherwise the state is an OrderedDict's attributes (a state dict's _metadata) or an opaque
        // object's: not kept.
        else if (target.kind != NodeKind::Object)
          expect(top(), NodeKind::Dict, "a dict before BUILD (objects are not rebuilt)");
        break;
      }
      case 'Q': persistent_load(); break;                               // BINPERSID
      case '0': pop(); break;                                           // POP
      case '1': pop_mark(); break;                                      // POP_MARK
      case '2': push(top()); break;                                     // DUP
      default: {
        static const char* hex = "0123456789abcdef";
        fail(std::string("unsupported pickle opcode 0x") + hex[op >> 4] + hex[op & 15]);
      }
    }
  }

  std::string_view p_;
  const PickleOptions& o_;
  size_t pos_ = 0, op_at_ = 0;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
  Pickle out_;
};

}  // namespace

Pickle read_pickle(std::string_view program, const PickleOptions& options) { return Machine(program, options).run(); }

}  // namespace crosstrain::torchsave
