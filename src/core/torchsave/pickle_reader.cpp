#include "core/torchsave/pickle_reader.h"

#include "core/torchsave/pickle_machine.h"

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

std::string_view Pickle::text(uint32_t i) const {
  const Node& n = nodes[i];
  switch (n.kind) {
    case NodeKind::String: case NodeKind::Global: case NodeKind::Object: return texts[n.ref];
    case NodeKind::Storage: return storages[n.ref].key;
    case NodeKind::Array: return texts[arrays[n.ref].bytes];
    default: return {};
  }
}

const std::vector<uint32_t>& Pickle::items(uint32_t i) const {
  static const std::vector<uint32_t> none;
  const Node& n = nodes[i];
  const bool container = n.kind == NodeKind::List || n.kind == NodeKind::Tuple || n.kind == NodeKind::Dict;
  return container ? lists[n.ref] : none;
}

namespace detail {

Machine::Machine(const ByteSource& source, uint64_t at, const PickleOptions& o) : in_(source, at), o_(o) {
  add(NodeKind::None);
  add_bool(false);
  add_bool(true);
  add_container(NodeKind::Tuple, {});
}

Pickle Machine::run() {
  while (pos_ < in_.size()) {
    op_at_ = pos_;
    const auto op = static_cast<unsigned char>(take(1)[0]);
    if (op == '.') {
      if (stack_.empty()) fail("STOP with an empty stack");
      out_.root = stack_.back();
      out_.end = pos_;
      release_unreachable();
      return std::move(out_);
    }
    step(op);
  }
  throw FormatError(o_.name + ": ends without STOP (truncated)");
}

// Frees the text and items of values the root does not reach (the latin-1 text a bytes object was
// encoded from, a popped list), as Python's reference counts free them when the load ends.
void Machine::release_unreachable() {
  std::vector<bool> reached(out_.nodes.size(), false);
  std::vector<uint32_t> todo{out_.root};
  reached[out_.root] = true;
  auto visit = [&](uint32_t j) {
    if (!reached[j]) reached[j] = true, todo.push_back(j);
  };
  while (!todo.empty()) {
    const uint32_t i = todo.back();
    todo.pop_back();
    if (node(i).kind == NodeKind::Tensor) visit(out_.tensors[node(i).ref].storage);
    for (uint32_t j : items(i)) visit(j);
  }
  std::vector<bool> text_used(out_.texts.size(), false), list_used(out_.lists.size(), false);
  for (uint32_t i = 0; i < out_.nodes.size(); ++i) {
    if (!reached[i]) continue;
    const Node& n = node(i);
    if (n.kind == NodeKind::String || n.kind == NodeKind::Global || n.kind == NodeKind::Object) text_used[n.ref] = true;
    if (n.kind == NodeKind::Array) text_used[out_.arrays[n.ref].bytes] = true;
    if (n.kind == NodeKind::List || n.kind == NodeKind::Tuple || n.kind == NodeKind::Dict) list_used[n.ref] = true;
  }
  for (size_t t = 0; t < out_.texts.size(); ++t)
    if (!text_used[t]) std::string().swap(out_.texts[t]);
  for (size_t l = 0; l < out_.lists.size(); ++l)
    if (!list_used[l]) std::vector<uint32_t>().swap(out_.lists[l]);
}

std::vector<uint32_t> Machine::pop_mark() {
  if (marks_.empty()) fail("no MARK to pop to");
  std::vector<uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
  stack_.resize(marks_.back());
  marks_.pop_back();
  return items;
}

void Machine::push_int(int64_t v) {
  if (v >= 0 && static_cast<uint64_t>(v) < kSmallInts) {
    if (small_ints_.empty()) small_ints_.assign(kSmallInts, kNoNode);
    uint32_t& cached = small_ints_[static_cast<size_t>(v)];
    if (cached == kNoNode) {
      Node n;
      n.kind = NodeKind::Int;
      n.integer = v;
      cached = add(n);
    }
    return push(cached);
  }
  Node n;
  n.kind = NodeKind::Int;
  n.integer = v;
  push(add(n));
}

// ---- the memo: keys as Python's pickler numbers them (0, 1, 2, ...) in a vector, others in a map ----
void Machine::memo_put(uint64_t key) {
  const uint32_t v = top();
  if (key < memo_.size() || key <= std::max<uint64_t>(uint64_t{1} << 16, 2 * pos_)) {
    if (key >= memo_.size()) memo_.resize(std::max<size_t>(static_cast<size_t>(key) + 1, 2 * memo_.size()), kNoNode);
    memo_count_ += memo_[key] == kNoNode;
    memo_[key] = v;
  } else {
    memo_count_ += sparse_memo_.insert_or_assign(key, v).second;
  }
}

void Machine::memo_get(uint64_t key) {
  if (key < memo_.size() && memo_[key] != kNoNode) return push(memo_[key]);
  auto it = sparse_memo_.find(key);
  if (it == sparse_memo_.end()) fail("memo entry " + std::to_string(key) + " was never stored");
  push(it->second);
}

void Machine::step(unsigned char op) {
  switch (op) {
    case 0x80: take(1); break;                                        // PROTO
    case 0x95: take(8); break;                                        // FRAME
    case '(': marks_.push_back(stack_.size()); break;                 // MARK
    case ')': push(kEmptyTuple); break;                               // EMPTY_TUPLE
    case ']': push(add_container(NodeKind::List, {})); break;         // EMPTY_LIST
    case '}': push(add_container(NodeKind::Dict, {})); break;         // EMPTY_DICT
    case 'N': push(kNone); break;                                     // NONE
    case 0x88: push(kTrue); break;                                    // NEWTRUE
    case 0x89: push(kFalse); break;                                   // NEWFALSE
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
      push(add(n));
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
    case 0x94: memo_put(memo_count_); break;                          // MEMOIZE
    case 'h': memo_get(uint_le(1)); break;                            // BINGET
    case 'j': memo_get(uint_le(4)); break;                            // LONG_BINGET
    case 't': push(add_container(NodeKind::Tuple, pop_mark())); break;  // TUPLE
    case 0x85: case 0x86: case 0x87: {                                // TUPLE1..3
      std::vector<uint32_t> items(op - 0x84);
      for (size_t i = items.size(); i-- > 0;) items[i] = pop();
      push(add_container(NodeKind::Tuple, std::move(items)));
      break;
    }
    case 'a': {                                                       // APPEND
      const uint32_t v = pop();
      expect(top(), NodeKind::List, "a list before APPEND");
      items_of(top()).push_back(v);
      break;
    }
    case 'e': {                                                       // APPENDS
      auto items = pop_mark();
      expect(top(), NodeKind::List, "a list before APPENDS");
      auto& l = items_of(top());
      l.insert(l.end(), items.begin(), items.end());
      break;
    }
    case 's': {                                                       // SETITEM
      const uint32_t v = pop(), k = pop();
      expect(top(), NodeKind::Dict, "a dict before SETITEM");
      auto& d = items_of(top());
      d.push_back(k);
      d.push_back(v);
      break;
    }
    case 'u': {                                                       // SETITEMS
      auto items = pop_mark();
      if (items.size() % 2) fail("SETITEMS with an odd number of items");
      expect(top(), NodeKind::Dict, "a dict before SETITEMS");
      auto& d = items_of(top());
      d.insert(d.end(), items.begin(), items.end());
      break;
    }
    case 'c': {                                                       // GLOBAL
      std::string module = line();
      push_global(module + "." + line());
      break;
    }
    case 0x93: {                                                      // STACK_GLOBAL
      const uint32_t name = pop(), module = pop();
      push_global(expect_text(module, "a module name") + "." + expect_text(name, "a global name"));
      break;
    }
    case 'R': reduce(); break;                                        // REDUCE
    case 0x81: case 0x92: {                                           // NEWOBJ, NEWOBJ_EX
      if (op == 0x92) pop();                                          // keyword arguments
      pop();                                                          // arguments
      const uint32_t cls = pop();
      if (!push_opaque_object(cls)) fail("objects are not rebuilt ('" + shown(text(cls)) + "')");
      break;
    }
    case 'b': build(); break;                                         // BUILD
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

}  // namespace detail

Pickle read_pickle(std::string_view program, const PickleOptions& options) {
  const MemorySource source(program);
  return detail::Machine(source, 0, options).run();
}

Pickle read_pickle(const ByteSource& source, uint64_t at, const PickleOptions& options) {
  return detail::Machine(source, at, options).run();
}

}  // namespace crosstrain::torchsave
