#include "core/torchsave/torch_file.h"

#include <functional>

#include <limits>
#include <sstream>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/torchsave/legacy_format.h"

namespace crosstrain::torchsave {
namespace {

std::string key_text(const Node& k) {
  if (k.kind == NodeKind::String) return "['" + k.text + "']";
  if (k.kind == NodeKind::Int) return "[" + std::to_string(k.integer) + "]";
  return "[?]";
}

// Names every tensor reachable from the root by its first path (depth-first, without recursion;
// each container is entered once, so shared or cyclic containers cost nothing extra).
// Values that were not read (opaque objects and classes) are listed in `unread`.
std::unordered_map<uint32_t, std::string> name_tensors(const Pickle& p, std::vector<TorchFile::Unread>& unread) {
  std::unordered_map<uint32_t, std::string> names;
  std::unordered_set<uint32_t> entered;
  std::vector<std::pair<uint32_t, std::string>> todo{{p.root, ""}};
  while (!todo.empty()) {
    auto [i, path] = std::move(todo.back());
    todo.pop_back();
    const Node& n = p.nodes[i];
    if (n.kind == NodeKind::Tensor) {
      names.emplace(i, path.empty() ? "(the root)" : path);
    } else if (n.kind == NodeKind::Object || (n.kind == NodeKind::Global && n.opaque)) {
      if (entered.insert(i).second) unread.push_back({i, path.empty() ? "(the root)" : path, n.text});
    } else if (n.kind == NodeKind::Dict || n.kind == NodeKind::List || n.kind == NodeKind::Tuple) {
      if (!entered.insert(i).second) continue;
      const bool dict = n.kind == NodeKind::Dict;
      // Pushed in reverse so the first entry is named first.
      for (size_t j = dict ? n.items.size() / 2 : n.items.size(); j-- > 0;) {
        if (dict)
          todo.emplace_back(n.items[2 * j + 1], path + key_text(p.nodes[n.items[2 * j]]));
        else
          todo.emplace_back(n.items[j], path + "[" + std::to_string(j) + "]");
      }
    }
  }
  return names;
}

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// Elements of storage the tensor reaches: offset + sum((size - 1) * stride) + 1, or 0 when it has
// no elements; false when that does not fit int64.
bool reach(const Node& t, int64_t* out) {
  for (int64_t s : t.sizes)
    if (s == 0) return *out = 0, true;
  int64_t last = t.offset;
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    int64_t step = 0;
    if (__builtin_mul_overflow(t.sizes[d] - 1, t.strides[d], &step) || __builtin_add_overflow(last, step, &last))
      return false;
  }
  return !__builtin_add_overflow(last, int64_t{1}, out);
}

// Checks every tensor against its storage's bytes; `bytes_of` gives them (FormatError when they
// are missing or short) and `label` names the storage in messages ("data/120").
void check_tensors(TorchFile& f, const std::function<std::string_view(uint32_t)>& bytes_of,
                   const std::function<std::string(const Node&)>& label) {
  const auto& nodes = f.pickle.nodes;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const Node& t = nodes[i];
    if (t.kind != NodeKind::Tensor) continue;
    auto named = f.tensor_names.find(i);
    const std::string name = "tensor " + (named == f.tensor_names.end() ? std::string("(unnamed)") : named->second);
    const Node& s = nodes[t.storage];
    if (!f.storage_bytes.count(t.storage)) {
      try {
        f.storage_bytes.emplace(t.storage, bytes_of(t.storage));
      } catch (const FormatError& e) {
        throw FormatError(name + ": " + e.what());
      }
    }
    int64_t needed = 0;
    if (!reach(t, &needed) || needed > s.numel) {
      std::ostringstream os;
      os << name << " of size " << dims_text(t.sizes) << ", stride " << dims_text(t.strides) << " and offset "
         << t.offset << " reaches past its storage (" << label(s) << ": " << s.numel << " " << dtype_name(s.dtype)
         << " elements)";
      throw FormatError(os.str());
    }
  }
}

TorchFile read_zip(std::string_view bytes, const ReadOptions& o) {
  ZipArchive zip(bytes, o.check_crc);
  const std::string& first = zip.first_name();
  const size_t slash = first.find('/');
  if (slash == std::string::npos) throw FormatError("not a torch.save() archive (records are not in one folder)");
  const std::string prefix = first.substr(0, slash + 1);
  if (!zip.contains(prefix + "data.pkl")) throw FormatError("not a torch.save() archive (no " + prefix + "data.pkl)");
  if (zip.contains(prefix + "byteorder") && zip.record(prefix + "byteorder") != "little")
    throw FormatError("a big-endian archive (byteorder '" + std::string(zip.record(prefix + "byteorder")) +
                      "') is not supported");
  TorchFile f;
  PickleOptions po;
  po.opaque_objects = o.opaque_objects;
  f.pickle = read_pickle(zip.record(prefix + "data.pkl"), po);
  f.tensor_names = name_tensors(f.pickle, f.unread);
  auto label = [](const Node& s) { return "data/" + s.text; };
  check_tensors(
      f,
      [&](uint32_t storage) {
        const Node& s = f.pickle.nodes[storage];
        const std::string_view data = zip.record(prefix + label(s));
        const uint64_t item = dtype_size(s.dtype);
        if (static_cast<uint64_t>(s.numel) > std::numeric_limits<uint64_t>::max() / item ||
            data.size() < static_cast<uint64_t>(s.numel) * item) {
          std::ostringstream os;
          os << "storage record " << label(s) << " holds " << data.size() << " bytes, fewer than its " << s.numel
             << " " << dtype_name(s.dtype) << " elements need (truncated or corrupt)";
          throw FormatError(os.str());
        }
        return data.substr(0, static_cast<size_t>(s.numel) * item);
      },
      label);
  return f;
}

TorchFile read_legacy(std::string_view bytes, const ReadOptions& o) {
  LegacyFile legacy = read_legacy_torch_file(bytes, o.opaque_objects);
  TorchFile f;
  f.pickle = std::move(legacy.pickle);
  f.storage_bytes = std::move(legacy.storage_bytes);
  f.tensor_names = name_tensors(f.pickle, f.unread);
  check_tensors(
      f, [](uint32_t) -> std::string_view { throw FormatError("a storage without its bytes"); },
      [](const Node& s) { return "storage " + s.text; });
  return f;
}

}  // namespace

std::string torch_file_layout(std::string_view bytes) {
  if (is_legacy_torch_file(bytes)) return "legacy";
  if (bytes.size() >= 262 && bytes.substr(257, 5) == "ustar") return "tar";
  if (bytes.substr(0, 4) == std::string_view("PK\x03\x04", 4)) return "zip";
  return "";
}

TorchFile read_torch_file(std::string_view bytes, const ReadOptions& options) {
  const std::string layout = torch_file_layout(bytes);
  if (layout == "legacy") return read_legacy(bytes, options);
  if (layout == "tar")
    throw FormatError("a tar archive, torch.save's format before PyTorch 0.4 ('storages', 'tensors', 'pickle'), "
                      "which is not supported: load it with torch 1.x and torch.save() it again");
  return read_zip(bytes, options);  // "not a zip archive ..." when it is not one either
}

}  // namespace crosstrain::torchsave
