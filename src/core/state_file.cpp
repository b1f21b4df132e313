#include "core/state_file.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/serialize.h>

#include <cstring>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/torchsave/torch_file.h"
#include "report/input_file.h"
#include "report/output.h"

namespace crosstrain::core {

void save_state_file(const c10::IValue& state, const std::string& path) {
  // torch.save's layout: a zip with data.pkl (protocol 2, no TorchScript type tags, which
  // torch.load(weights_only=True) rejects) and one record per storage under data/.
  std::vector<char> pkl;
  torch::jit::Pickler pickler([&](const char* b, size_t n) { pkl.insert(pkl.end(), b, b + n); }, nullptr, nullptr,
                              nullptr, nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(state);
  pickler.stop();
  // The archive streams into the one crash-safe writer reports use too (report/output.h):
  // temporary file, fsync, rename, directory fsync; special files in place. Nothing is thrown
  // through the zip writer: a failed write is kept, the rest discarded, and thrown at the end, so
  // the temporary file is removed and the old file stays.
  report::write_file_atomic(path, [&](const report::ByteSink& sink) {
    std::string error;
    {
      caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
        if (!error.empty()) return n;
        try {
          sink(static_cast<const char*>(data), n);
        } catch (const std::exception& e) {
          error = e.what();
        }
        return n;
      });
      writer.writeRecord("data.pkl", pkl.data(), pkl.size());
      writer.writeRecord("byteorder", "little", 6);
      const auto& tensors = pickler.tensorData();
      for (size_t i = 0; i < tensors.size(); ++i) {
        auto data = torch::jit::getWriteableTensorData(tensors[i]);
        writer.writeRecord("data/" + std::to_string(i), data.data(), data.sizeInBytes());
      }
      writer.writeEndOfFile();
    }
    if (!error.empty()) throw std::runtime_error(error);
  });
}

namespace {

at::ScalarType scalar_type(torchsave::DType t) {
  using torchsave::DType;
  switch (t) {
    case DType::Float32: return at::kFloat;
    case DType::Float64: return at::kDouble;
    case DType::Float16: return at::kHalf;
    case DType::BFloat16: return at::kBFloat16;
    case DType::Int64: return at::kLong;
    case DType::Int32: return at::kInt;
    case DType::Int16: return at::kShort;
    case DType::Int8: return at::kChar;
    case DType::UInt8: return at::kByte;
    case DType::Bool: return at::kBool;
    case DType::Complex64: return at::kComplexFloat;
    case DType::Complex128: return at::kComplexDouble;
  }
  return at::kFloat;
}

// The checked graph as IValues. Shared nodes stay shared (one IValue each); every storage record
// is read once, into one tensor's memory, and the tensors of the file are views of it with their
// offsets and strides, as after Python's torch.load (parameters saved as views of one flat buffer
// stay views of one buffer). A container that contains itself and nesting deeper than kMaxDepth
// are refused rather than recursed into.
class GraphToIValue {
 public:
  explicit GraphToIValue(const torchsave::TorchFile& f)
      : f_(f), p_(f.pickle), texts_(p_.texts.size()), containers_(p_.lists.size()), state_(p_.lists.size(), 0),
        records_(f.records.size()) {}

  c10::IValue convert(uint32_t i, int depth = 0) {
    using torchsave::NodeKind;
    const auto& n = p_.node(i);
    switch (n.kind) {  // values that are never shared cost no entry here
      case NodeKind::None: return c10::IValue();
      case NodeKind::Bool: return n.integer != 0;
      case NodeKind::Int: return n.integer;
      case NodeKind::Float: return n.real;
      case NodeKind::String: {
        c10::IValue& s = texts_[n.ref];
        if (s.isNone()) s = std::string(p_.text(i));
        return s;
      }
      case NodeKind::Tensor: case NodeKind::Array: {
        auto it = others_.find(i);
        return it != others_.end() ? it->second : others_.emplace(i, other(i)).first->second;
      }
      default: break;
    }
    const bool container = n.kind == NodeKind::List || n.kind == NodeKind::Tuple || n.kind == NodeKind::Dict;
    if (!container) return other(i);
    if (state_[n.ref] == 2) return containers_[n.ref];
    if (state_[n.ref] == 1) throw torchsave::FormatError("a container holds itself");
    if (depth > kMaxDepth) throw torchsave::FormatError("containers nested deeper than " + std::to_string(kMaxDepth));
    state_[n.ref] = 1;
    c10::IValue v;
    switch (n.kind) {
      case NodeKind::List: {
        c10::impl::GenericList l(c10::AnyType::get());
        l.reserve(p_.items(i).size());
        for (uint32_t j : p_.items(i)) l.push_back(convert(j, depth + 1));
        v = l;
        break;
      }
      case NodeKind::Tuple: {
        std::vector<c10::IValue> items;
        items.reserve(p_.items(i).size());
        for (uint32_t j : p_.items(i)) items.push_back(convert(j, depth + 1));
        v = c10::ivalue::Tuple::create(std::move(items));
        break;
      }
      default: v = dict(i, depth); break;
    }
    containers_[n.ref] = v;
    state_[n.ref] = 2;
    return v;
  }

 private:
  static constexpr int kMaxDepth = 256;

  // Tensors, numpy arrays, and what reads as None or is refused.
  c10::IValue other(uint32_t i) {
    using torchsave::NodeKind;
    const auto& n = p_.node(i);
    switch (n.kind) {
      case NodeKind::Tensor: {
        const auto& t = p_.tensor(i);
        at::Tensor x = storage(t.storage).as_strided(t.sizes, t.strides, t.offset);
        if (n.flag && x.is_floating_point()) x.requires_grad_(true);
        return x;
      }
      case NodeKind::Array: return array_tensor(i);
      case NodeKind::Object: return c10::IValue();  // not read: None here, listed by load_state_file
      case NodeKind::Global:
        if (n.flag) return c10::IValue();  // an opaque class, listed as unread
        throw torchsave::FormatError("a class or function '" + torchsave::shown(p_.text(i)) + "' as a value");
      default: throw torchsave::FormatError("a storage or numpy dtype outside a tensor");
    }
  }

  // A dict as Python builds it from SETITEMs: each key where it first occurs, with its last value.
  // A key node the file repeats (one memoised string set a million times) is hashed at its first and
  // its last place only, so time stays linear in the file however long the key.
  c10::IValue dict(uint32_t i, int depth) {
    const auto& items = p_.items(i);
    if (last_at_.empty()) last_at_.assign(p_.nodes.size(), 0);
    for (size_t j = 0; j + 1 < items.size(); j += 2) last_at_[items[j]] = static_cast<uint32_t>(j);
    std::vector<uint32_t> places;  // the first and the last place of each key node
    for (size_t j = 0; j + 1 < items.size(); j += 2) {
      const uint32_t k = items[j];
      const bool last = last_at_[k] == j;
      if (last || !seen(k)) places.push_back(static_cast<uint32_t>(j));
      if (!last) seen_set(k);
    }
    for (uint32_t j : places) seen_clear(items[j]);
    c10::impl::GenericDict d(c10::AnyType::get(), c10::AnyType::get());
    for (uint32_t j : places) {
      c10::IValue key = convert(items[j], depth + 1);
      if (!key.isString() && !key.isInt() && !key.isBool() && !key.isDouble() && !key.isNone())
        throw torchsave::FormatError("a dict key that is not a string or a number");
      d.insert_or_assign(std::move(key), convert(items[j + 1], depth + 1));
    }
    return d;
  }
  bool seen(uint32_t k) const { return k < seen_bits_.size() && seen_bits_[k]; }
  void seen_set(uint32_t k) {
    if (seen_bits_.empty()) seen_bits_.assign(p_.nodes.size(), false);
    seen_bits_[k] = true;
  }
  void seen_clear(uint32_t k) {
    if (k < seen_bits_.size()) seen_bits_[k] = false;
  }

  // A numpy array becomes a tensor, as torch.from_numpy would make it (Fortran order kept by strides).
  at::Tensor array_tensor(uint32_t i) const {
    const auto& n = p_.node(i);
    const auto& sizes = p_.array(i).sizes;
    const std::string_view bytes = p_.text(i);
    at::Tensor t = at::empty({static_cast<int64_t>(bytes.size() / torchsave::dtype_size(n.dtype))},
                             at::TensorOptions().dtype(scalar_type(n.dtype)));
    if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
    if (!n.flag) return t.view(sizes);
    std::vector<int64_t> reversed(sizes.rbegin(), sizes.rend());
    return t.view(reversed).permute(reverse_order(sizes.size()));
  }
  static std::vector<int64_t> reverse_order(size_t dims) {
    std::vector<int64_t> order;
    for (size_t i = dims; i-- > 0;) order.push_back(static_cast<int64_t>(i));
    return order;
  }
  // One tensor per storage record, read from the file straight into its memory.
  const at::Tensor& storage(uint32_t s) {
    const uint32_t r = f_.record_of(s);
    at::Tensor& t = records_[r];
    if (!t.defined()) {
      const auto& rec = f_.records[r];
      t = at::empty({rec.numel}, at::TensorOptions().dtype(scalar_type(rec.dtype)));
      if (rec.numel > 0) f_.read_storage(r, static_cast<char*>(t.data_ptr()));
    }
    return t;
  }
  const torchsave::TorchFile& f_;
  const torchsave::Pickle& p_;
  // Converted once, shared by every use: per text, per container (with its state: 0 not seen,
  // 1 being converted, 2 done), per tensor and array node, per storage record.
  std::vector<c10::IValue> texts_, containers_;
  std::vector<char> state_;
  std::unordered_map<uint32_t, c10::IValue> others_;
  std::vector<at::Tensor> records_;
  std::vector<uint32_t> last_at_;  // per key node: its last place in the dict being converted
  std::vector<bool> seen_bits_;
};

}  // namespace

c10::IValue load_state_file(const std::string& path, std::vector<UnreadValue>* unread) {
  // Regular files only: a directory, FIFO or device is refused with its kind named. The file is
  // read piece by piece: the pickle, then each storage into its tensor (never the whole file).
  uint64_t size = 0;
  const int fd = report::open_regular_file(path, &size);
  torchsave::FileSource source(fd, size);
  if (size > kMaxStateFileBytes)
    throw std::runtime_error(path + ": state file of " + std::to_string(size) + " bytes is larger than the limit of " +
                             report::byte_size_text(kMaxStateFileBytes));
  try {
    torchsave::ReadOptions options;
    options.opaque_objects = unread != nullptr;
    const torchsave::TorchFile file = torchsave::read_torch_file(source, options);
    if (unread)
      for (const auto& u : file.unread) unread->push_back({u.name, u.class_name});
    return GraphToIValue(file).convert(file.pickle.root);
  } catch (const torchsave::FormatError& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace crosstrain::core
