#pragma once
// The machine behind read_pickle (pickle_reader.h), shared by its two halves: pickle_reader.cpp
// runs the opcodes (stack, memo, containers) and pickle_calls.cpp the few calls it allows (tensors,
// storages, numpy arrays and scalars, _codecs.encode, OrderedDict). Not for other units.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/torchsave/pickle_reader.h"

namespace crosstrain::torchsave::detail {

constexpr size_t kMaxDims = 64;
constexpr size_t kMaxArguments = 8;      // the most any allowed callable takes (7)
constexpr uint64_t kSmallInts = 65536;   // 0..65535 (BININT1, BININT2): one node each
constexpr size_t kWindow = size_t{1} << 20;
constexpr uint32_t kNoNode = std::numeric_limits<uint32_t>::max();

// Nodes every program has, shared as Python shares its singletons.
constexpr uint32_t kNone = 0, kFalse = 1, kTrue = 2, kEmptyTuple = 3;

// The program's bytes: all of them when they are in memory, otherwise a window onto the source that
// follows the machine.
class Input {
 public:
  Input(const ByteSource& source, uint64_t at)
      : source_(source), at_(at), size_(at <= source.size() ? source.size() - at : 0),
        direct_(source.data() ? source.data() + std::min(at, source.size()) : nullptr) {}
  uint64_t size() const { return size_; }
  // [pos, pos + n), valid until the next call; pos + n <= size().
  std::string_view get(uint64_t pos, size_t n) {
    if (direct_) return {direct_ + pos, n};
    if (pos < window_at_ || pos + n > window_at_ + window_.size()) {
      const size_t len = std::max<uint64_t>(n, std::min<uint64_t>(kWindow, size_ - pos));
      if (window_.capacity() > 4 * kWindow && len <= kWindow) window_ = std::string();  // after a long string
      window_.resize(len);
      source_.read(at_ + pos, len, window_.data());
      window_at_ = pos;
    }
    return {window_.data() + (pos - window_at_), n};
  }
  // The position of the first '\n' at or after `pos`, or size().
  uint64_t find_newline(uint64_t pos) {
    while (pos < size_) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kWindow, size_ - pos));
      const std::string_view chunk = get(pos, n);
      if (const void* nl = std::memchr(chunk.data(), '\n', n))
        return pos + static_cast<uint64_t>(static_cast<const char*>(nl) - chunk.data());
      pos += n;
    }
    return size_;
  }

 private:
  const ByteSource& source_;
  uint64_t at_, size_;
  const char* direct_;
  std::string window_;
  uint64_t window_at_ = 0;
};

class Machine {
 public:
  Machine(const ByteSource& source, uint64_t at, const PickleOptions& o);

  Pickle run();

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(o_.name + ": " + what + " at byte " + std::to_string(o_.origin + op_at_));
  }
  std::string_view take(uint64_t n) {
    if (n > in_.size() - pos_) fail("argument runs past the end of the program");
    const auto s = in_.get(pos_, static_cast<size_t>(n));
    pos_ += n;
    return s;
  }
  uint64_t uint_le(int n) {
    auto s = take(n);
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[i]);
    return v;
  }
  std::string line() {
    const uint64_t nl = in_.find_newline(pos_);
    if (nl == in_.size()) fail("GLOBAL without its newline");
    std::string s(take(nl - pos_));
    take(1);
    return s;
  }

  // ---- the graph ----
  uint32_t add(const Node& n) {
    if (out_.nodes.size() >= kNoNode) fail("more than 4 billion values");
    out_.nodes.push_back(n);
    return static_cast<uint32_t>(out_.nodes.size() - 1);
  }
  uint32_t add(NodeKind k) {
    Node n;
    n.kind = k;
    return add(n);
  }
  uint32_t add_bool(bool v) {
    Node n;
    n.kind = NodeKind::Bool;
    n.integer = v;
    return add(n);
  }
  template <typename Table>
  uint32_t next_ref(const Table& t) {
    if (t.size() >= kNoNode) fail("more than 4 billion values");
    return static_cast<uint32_t>(t.size());
  }
  uint32_t add_text(NodeKind k, std::string s) {
    Node n;
    n.kind = k;
    n.ref = next_ref(out_.texts);
    out_.texts.push_back(std::move(s));
    return add(n);
  }
  uint32_t add_container(NodeKind k, std::vector<uint32_t> items) {
    Node n;
    n.kind = k;
    n.ref = next_ref(out_.lists);
    out_.lists.push_back(std::move(items));
    return add(n);
  }
  const Node& node(uint32_t i) const { return out_.nodes[i]; }
  // A container's items, to change: the node must be a List or a Dict (`expect` first).
  std::vector<uint32_t>& items_of(uint32_t i) { return out_.lists[out_.nodes[i].ref]; }
  const std::vector<uint32_t>& items(uint32_t i) const { return out_.items(i); }
  std::string_view text(uint32_t i) const { return out_.text(i); }  // "" for a node without text

  // Frees the text and items of values the root does not reach (the latin-1 text a bytes object was
  // encoded from, a popped list), as Python's reference counts free them when the load ends.
  void release_unreachable();

  // ---- the stack ----
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
  std::vector<uint32_t> pop_mark();
  void push(uint32_t v) { stack_.push_back(v); }
  void push_int(int64_t v);
  void push_string(std::string_view s) { push(add_text(NodeKind::String, std::string(s))); }

  // ---- the memo: keys as Python's pickler numbers them (0, 1, 2, ...) in a vector, others in a map ----
  void memo_put(uint64_t key);
  void memo_get(uint64_t key);

  // ---- globals and calls (pickle_calls.cpp) ----
  void push_global(std::string name);
  // An instance of an opaque class (REDUCE, NEWOBJ): its arguments are dropped, nothing is called.
  bool push_opaque_object(uint32_t callable);
  const Node& expect(uint32_t i, NodeKind k, const char* what) {
    if (node(i).kind != k) fail(std::string("expected ") + what);
    return node(i);
  }
  const std::string& expect_text(uint32_t i, const char* what) {
    expect(i, NodeKind::String, what);
    return out_.texts[out_.nodes[i].ref];
  }
  int64_t expect_count(uint32_t i, const char* what) {
    const int64_t v = expect(i, NodeKind::Int, what).integer;
    if (v < 0) fail(std::string("negative ") + what);
    return v;
  }
  std::vector<int64_t> dims(uint32_t i, const char* what) {
    expect(i, NodeKind::Tuple, what);
    if (items(i).size() > kMaxDims) fail(std::string(what) + " with more than 64 dimensions");
    std::vector<int64_t> out;
    for (uint32_t d : items(i)) out.push_back(expect_count(d, what));
    return out;
  }
  // A call's arguments, copied (they are few; a longer tuple is refused before anything is copied).
  std::vector<uint32_t> arguments(uint32_t tuple, const char* what) {
    expect(tuple, NodeKind::Tuple, what);
    if (items(tuple).size() > kMaxArguments) fail(std::string(what) + " with too many items");
    return items(tuple);
  }

  // numpy.dtype("f4", False, True): the type code is checked here, the byte order by BUILD.
  void numpy_dtype(const std::vector<uint32_t>& a);
  // dtype state (version, byte order, ...): '<' and '|' (and '=' on this little-endian reader).
  void build_numpy_dtype(uint32_t state);
  // An Array node with no data yet (an empty 1-d array until BUILD gives it its state).
  uint32_t add_array();
  // The array `arr` gets its dtype, shape and bytes (a String node's text, shared, not copied).
  void set_array_data(uint32_t arr, uint32_t dtype, uint32_t sizes, uint32_t bytes);
  // ndarray.__setstate__((version, shape, dtype, is_fortran, data)).
  void build_numpy_array(uint32_t arr, uint32_t state);
  // numpy.core.multiarray.scalar(dtype, bytes): a number.
  void numpy_scalar(const std::vector<uint32_t>& a);
  void rebuild_tensor(const std::string& name, const std::vector<uint32_t>& a);
  void reduce();           // REDUCE: the allowed callables
  void persistent_load();  // BINPERSID: a storage
  void build();            // BUILD: numpy state; an OrderedDict's or an opaque object's is dropped

  void step(unsigned char op);

  Input in_;
  const PickleOptions& o_;
  uint64_t pos_ = 0, op_at_ = 0;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::vector<uint32_t> memo_, small_ints_;
  std::unordered_map<uint64_t, uint32_t> sparse_memo_;
  uint64_t memo_count_ = 0;
  uint32_t empty_text_ = kNoNode;
  Pickle out_;
};

}  // namespace crosstrain::torchsave::detail
