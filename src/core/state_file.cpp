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

// The checked graph as IValues. Shared nodes stay shared (one IValue each; tensors that share a
// storage share its memory, as after Python's torch.load); a container that contains itself and
// nesting deeper than kMaxDepth are refused rather than recursed into.
class GraphToIValue {
 public:
  explicit GraphToIValue(const torchsave::TorchFile& f)
      : f_(f), done_(f.pickle.nodes.size()), state_(f.pickle.nodes.size(), 0) {}

  c10::IValue convert(uint32_t i, int depth = 0) {
    using torchsave::NodeKind;
    if (state_[i] == 2) return done_[i];
    if (state_[i] == 1) throw torchsave::FormatError("a container holds itself");
    if (depth > kMaxDepth) throw torchsave::FormatError("containers nested deeper than " + std::to_string(kMaxDepth));
    state_[i] = 1;
    const auto& n = f_.pickle.nodes[i];
    c10::IValue v;
    switch (n.kind) {
      case NodeKind::None: break;
      case NodeKind::Bool: v = n.integer != 0; break;
      case NodeKind::Int: v = n.integer; break;
      case NodeKind::Float: v = n.real; break;
      case NodeKind::String: v = n.text; break;
      case NodeKind::List: {
        c10::impl::GenericList l(c10::AnyType::get());
        l.reserve(n.items.size());
        for (uint32_t j : n.items) l.push_back(convert(j, depth + 1));
        v = l;
        break;
      }
      case NodeKind::Tuple: {
        std::vector<c10::IValue> items;
        for (uint32_t j : n.items) items.push_back(convert(j, depth + 1));
        v = c10::ivalue::Tuple::create(std::move(items));
        break;
      }
      case NodeKind::Dict: {
        c10::impl::GenericDict d(c10::AnyType::get(), c10::AnyType::get());
        for (size_t j = 0; j + 1 < n.items.size(); j += 2) {
          c10::IValue key = convert(n.items[j], depth + 1);
          if (!key.isString() && !key.isInt() && !key.isBool() && !key.isDouble() && !key.isNone())
            throw torchsave::FormatError("a dict key that is not a string or a number");
          d.insert_or_assign(std::move(key), convert(n.items[j + 1], depth + 1));
        }
        v = d;
        break;
      }
      case NodeKind::Tensor: {
        const auto& t = n;
        at::Tensor whole = storage(t.storage);
        at::Tensor x = whole.as_strided(t.sizes, t.strides, t.offset);
        if (t.requires_grad && x.is_floating_point()) x.requires_grad_(true);
        v = x;
        break;
      }
      case NodeKind::Array: v = array_tensor(n); break;
      case NodeKind::Object: break;  // not read: None here, listed by load_state_file
      case NodeKind::Global:
        if (n.opaque) break;
        [[fallthrough]];
      case NodeKind::NumpyDtype:
      case NodeKind::Storage:
        throw torchsave::FormatError(n.kind == NodeKind::Global ? "a class or function '" + n.text + "' as a value"
                                                                : std::string("a storage or numpy dtype outside a tensor"));
    }
    done_[i] = v;
    state_[i] = 2;
    return v;
  }

 private:
  static constexpr int kMaxDepth = 256;
  // A numpy array becomes a tensor, as torch.from_numpy would make it (Fortran order kept by strides).
  static at::Tensor array_tensor(const torchsave::Node& n) {
    at::Tensor t = at::empty({static_cast<int64_t>(n.text.size() / torchsave::dtype_size(n.dtype))},
                             at::TensorOptions().dtype(scalar_type(n.dtype)));
    if (!n.text.empty()) std::memcpy(t.data_ptr(), n.text.data(), n.text.size());
    if (!n.fortran) return t.view(n.sizes);
    std::vector<int64_t> reversed(n.sizes.rbegin(), n.sizes.rend());
    return t.view(reversed).permute(reverse_order(n.sizes.size()));
  }
  static std::vector<int64_t> reverse_order(size_t dims) {
    std::vector<int64_t> order;
    for (size_t i = dims; i-- > 0;) order.push_back(static_cast<int64_t>(i));
    return order;
  }
  // One tensor per storage, copied out of the file's bytes (which need not be aligned).
  at::Tensor storage(uint32_t s) {
    auto it = storages_.find(s);
    if (it != storages_.end()) return it->second;
    const auto& node = f_.pickle.nodes[s];
    const std::string_view bytes = f_.storage_bytes.at(s);
    at::Tensor t = at::empty({node.numel}, at::TensorOptions().dtype(scalar_type(node.dtype)));
    if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
    return storages_.emplace(s, t).first->second;
  }
  const torchsave::TorchFile& f_;
  std::vector<c10::IValue> done_;
  std::vector<char> state_;  // 0 not seen, 1 being converted, 2 done
  std::unordered_map<uint32_t, at::Tensor> storages_;
};

}  // namespace

c10::IValue load_state_file(const std::string& path, std::vector<UnreadValue>* unread) {
  // Regular files only: a directory, FIFO or device is refused with its kind named.
  std::vector<uint8_t> bytes;
  report::read_regular_file(path, kMaxStateFileBytes, "state file", bytes);
  try {
    torchsave::ReadOptions options;
    options.opaque_objects = unread != nullptr;
    const torchsave::TorchFile file = torchsave::read_torch_file(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), options);
    if (unread)
      for (const auto& u : file.unread) unread->push_back({u.name, u.class_name});
    return GraphToIValue(file).convert(file.pickle.root);
  } catch (const torchsave::FormatError& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace crosstrain::core
