#include "core/torchsave/torch_file.h"

#include <algorithm>
#include <limits>
#include <sstream>
#include <utility>

#include "core/torchsave/legacy_format.h"

namespace crosstrain::torchsave {

namespace {

constexpr uint32_t kHead = 6, kTail = 6;  // keys of a deep path shown at each end
constexpr size_t kKeyShown = 80;
constexpr size_t kUnreadListed = 1000;
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (d.size() > 8 ? ", ...]" : "]");
}

// Elements of storage the tensor reaches: offset + sum((size - 1) * stride) + 1, or 0 when it has
// no elements; false when that does not fit int64.
bool reach(const TensorLayout& t, int64_t* out) {
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

}  // namespace

// Fills a TorchFile's paths and records; a friend, so that TorchFile's tables stay private.
class TorchFileBuilder {
 public:
  explicit TorchFileBuilder(TorchFile& f) : f_(f) {}
  void set_source(const ByteSource& s, std::shared_ptr<const ByteSource> owned = nullptr) {
    f_.source_ = &s;
    f_.owned_source_ = std::move(owned);
  }

  // Every container, tensor and unread value reachable from the root gets its first path (depth
  // first, without recursion; each container is entered once, so shared or cyclic containers cost
  // nothing extra): its parent and its place there, not the text, which name_of builds on demand.
  void name_paths() {
    const Pickle& p = f_.pickle;
    struct Todo {
      uint32_t node, parent, slot;
    };
    std::vector<Todo> todo{{p.root, kNone, 0}};
    while (!todo.empty()) {
      const Todo t = todo.back();
      todo.pop_back();
      const Node& n = p.node(t.node);
      const bool container = n.kind == NodeKind::Dict || n.kind == NodeKind::List || n.kind == NodeKind::Tuple;
      const bool unread = n.kind == NodeKind::Object || (n.kind == NodeKind::Global && n.flag);
      if (!container && !unread && n.kind != NodeKind::Tensor) continue;
      if (unread && f_.unread.size() >= kUnreadListed) continue;  // a million objects: the first ones
      TorchFile::PathStep s;
      if (t.parent != kNone) {
        const TorchFile::PathStep& up = *f_.path_of(t.parent);
        s.parent = t.parent;
        s.slot = t.slot;
        s.depth = up.depth + 1;
        s.anchor = s.depth <= kHead ? t.node : up.anchor;
      } else {
        s.parent = kNone;
        s.depth = 0;
        s.anchor = t.node;
      }
      if (container) {
        if (f_.container_paths_.empty()) f_.container_paths_.resize(p.lists.size());
        TorchFile::PathStep& slot = f_.container_paths_[n.ref];
        if (slot.depth != TorchFile::kUnreached) continue;  // reached before: its first path stands
        slot = s;
      } else if (!f_.leaf_paths_.emplace(t.node, s).second) {
        continue;
      }
      if (n.kind == NodeKind::Tensor) {
        f_.tensors.push_back(t.node);
      } else if (unread) {
        f_.unread.push_back({t.node, f_.name_of(t.node), shown(p.text(t.node))});
      } else {
        const auto& items = p.items(t.node);
        const bool dict = n.kind == NodeKind::Dict;
        // Pushed in reverse so the first entry is named first.
        for (size_t j = dict ? items.size() / 2 : items.size(); j-- > 0;) {
          const uint32_t slot = static_cast<uint32_t>(dict ? 2 * j : j);
          todo.push_back({items[dict ? 2 * j + 1 : j], t.node, slot});
        }
      }
    }
  }

  // One record per storage key, for every tensor of the program (reachable or not), each tensor
  // checked against it. `locate` gives a key's record (FormatError when it is missing or short).
  template <typename Locate>
  void check_tensors(Locate locate) {
    const Pickle& p = f_.pickle;
    f_.record_index_.assign(p.storages.size(), kNone);
    std::unordered_map<std::string_view, uint32_t> by_key;
    for (uint32_t i = 0; i < p.nodes.size(); ++i) {
      if (p.node(i).kind != NodeKind::Tensor) continue;
      const TensorLayout& t = p.tensor(i);
      const Node& s = p.node(t.storage);
      uint32_t& r = f_.record_index_[s.ref];
      if (r == kNone) {
        const StorageRef& ref = p.storage(t.storage);
        auto [it, fresh] = by_key.emplace(ref.key, static_cast<uint32_t>(f_.records.size()));
        if (fresh) {
          try {
            f_.records.push_back(locate(ref.key, s.dtype, ref.numel));
          } catch (const FormatError& e) {
            throw FormatError(tensor_name(i) + ": " + e.what());
          }
        } else if (f_.records[it->second].dtype != s.dtype || f_.records[it->second].numel != ref.numel) {
          throw FormatError(tensor_name(i) + ": " + f_.records[it->second].label +
                            " is used with two types or sizes (torch.save never writes that)");
        }
        r = it->second;
      }
      const StorageRecord& rec = f_.records[r];
      int64_t needed = 0;
      if (!reach(t, &needed) || needed > rec.numel) {
        std::ostringstream os;
        os << tensor_name(i) << " of size " << dims_text(t.sizes) << ", stride " << dims_text(t.strides)
           << " and offset " << t.offset << " reaches past its storage (" << rec.label << ": " << rec.numel << " "
           << dtype_name(rec.dtype) << " elements)";
        throw FormatError(os.str());
      }
    }
  }

 private:
  std::string tensor_name(uint32_t i) const {
    return "tensor " + (f_.path_of(i) ? f_.name_of(i) : std::string("(unnamed)"));
  }
  TorchFile& f_;
};

const TorchFile::PathStep* TorchFile::path_of(uint32_t node) const {
  const Node& n = pickle.node(node);
  if (n.kind == NodeKind::Dict || n.kind == NodeKind::List || n.kind == NodeKind::Tuple) {
    if (n.ref >= container_paths_.size() || container_paths_[n.ref].depth == kUnreached) return nullptr;
    return &container_paths_[n.ref];
  }
  auto it = leaf_paths_.find(node);
  return it == leaf_paths_.end() ? nullptr : &it->second;
}

std::string TorchFile::name_of(uint32_t node) const {
  const PathStep* at = path_of(node);
  if (!at) return "(unreachable)";
  if (at->depth == 0) return "(the root)";
  auto key = [&](const PathStep& s) {
    if (pickle.node(s.parent).kind != NodeKind::Dict) return "[" + std::to_string(s.slot) + "]";
    const uint32_t k = pickle.items(s.parent)[s.slot];
    if (pickle.node(k).kind == NodeKind::String) return "['" + shown(pickle.text(k), kKeyShown) + "']";
    if (pickle.node(k).kind == NodeKind::Int) return "[" + std::to_string(pickle.node(k).integer) + "]";
    return std::string("[?]");
  };
  // Keys from `from` upward, `n` of them, in root-to-leaf order.
  auto keys = [&](uint32_t from, uint32_t n) {
    std::vector<std::string> parts;
    for (uint32_t i = from; n-- > 0;) {
      const PathStep& s = *path_of(i);
      parts.push_back(key(s));
      i = s.parent;
    }
    std::string out;
    for (size_t i = parts.size(); i-- > 0;) out += parts[i];
    return out;
  };
  if (at->depth <= kHead + kTail) return keys(node, at->depth);
  return keys(at->anchor, kHead) + "...(" + std::to_string(at->depth - kHead - kTail) + " more)..." +
         keys(node, kTail);
}

void TorchFile::read_storage(uint32_t r, char* dest) const {
  const StorageRecord& rec = records.at(r);
  read_record(*source_, rec.place, dest, rec.bytes(), rec.check_crc, rec.label);
}

std::string TorchFile::read_storage(uint32_t r) const {
  std::string out(static_cast<size_t>(records.at(r).bytes()), '\0');
  read_storage(r, out.data());
  return out;
}

namespace {

void read_zip(const ByteSource& source, const ReadOptions& o, TorchFile& f) {
  ZipArchive zip(source, o.check_crc);
  const std::string& first = zip.first_name();
  const size_t slash = first.find('/');
  if (slash == std::string::npos) throw FormatError("not a torch.save() archive (records are not in one folder)");
  const std::string prefix = first.substr(0, slash + 1);
  if (!zip.contains(prefix + "data.pkl"))
    throw FormatError("not a torch.save() archive (no " + shown(prefix) + "data.pkl)");
  if (zip.contains(prefix + "byteorder")) {
    const std::string order = zip.read(prefix + "byteorder");
    if (order != "little") throw FormatError("a big-endian archive (byteorder '" + shown(order) + "') is not supported");
  }
  PickleOptions po;
  po.opaque_objects = o.opaque_objects;
  f.pickle = read_pickle(zip.read(prefix + "data.pkl"), po);
  TorchFileBuilder b(f);
  b.name_paths();
  b.check_tensors([&](const std::string& key, DType dtype, int64_t numel) {
    StorageRecord r;
    r.label = "data/" + shown(key);
    r.dtype = dtype;
    r.numel = numel;
    r.place = zip.locate(prefix + "data/" + key);
    r.check_crc = zip.check_crc();
    const uint64_t item = dtype_size(dtype);
    if (static_cast<uint64_t>(numel) > std::numeric_limits<uint64_t>::max() / item || r.place.size < r.bytes()) {
      std::ostringstream os;
      os << "storage record " << r.label << " holds " << r.place.size << " bytes, fewer than its " << numel << " "
         << dtype_name(dtype) << " elements need (truncated or corrupt)";
      throw FormatError(os.str());
    }
    return r;
  });
}

void read_legacy(const ByteSource& source, const ReadOptions& o, TorchFile& f) {
  LegacyFile legacy = read_legacy_torch_file(source, o.opaque_objects);
  f.pickle = std::move(legacy.pickle);
  TorchFileBuilder b(f);
  b.name_paths();
  b.check_tensors([&](const std::string& key, DType dtype, int64_t numel) {
    // The legacy reader checked every listed storage against the file and every storage against the list.
    StorageRecord r;
    r.label = "storage " + shown(key);
    r.dtype = dtype;
    r.numel = numel;
    r.place.offset = legacy.storage_offsets.at(key);
    r.place.size = r.bytes();
    return r;
  });
}

}  // namespace

namespace {

// safetensors: an 8-byte little-endian header length, then the JSON header, an object (at most
// 100 MB in the safetensors library).
bool is_safetensors(std::string_view bytes) {
  if (bytes.size() < 9 || bytes[8] != '{') return false;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  return n >= 2 && n <= (uint64_t{100} << 20);
}

}  // namespace

std::string torch_file_layout(std::string_view bytes) {
  if (bytes.empty()) return "empty";
  if (is_legacy_torch_file(bytes)) return "legacy";
  if (is_safetensors(bytes)) return "safetensors";
  if (bytes.size() >= 262 && bytes.substr(257, 5) == "ustar") return "tar";
  if (bytes.substr(0, 4) == std::string_view("PK\x03\x04", 4)) return "zip";
  return "";
}

std::string torch_file_layout(const ByteSource& source) {
  return torch_file_layout(source.read_string(0, static_cast<size_t>(std::min<uint64_t>(source.size(), 262))));
}

TorchFile read_torch_file(const ByteSource& source, const ReadOptions& options) {
  TorchFile f;
  TorchFileBuilder(f).set_source(source);
  const std::string layout = torch_file_layout(source);
  if (layout == "empty") throw FormatError("an empty file (0 bytes), not a torch.save() file");
  if (layout == "safetensors")
    throw FormatError("a safetensors file, which crosstrain does not read (it reads torch.save() files): convert it "
                      "in Python with torch.save(safetensors.torch.load_file(PATH), 'weights.pt')");
  if (layout == "tar")
    throw FormatError("a tar archive, torch.save's format before PyTorch 0.4 ('storages', 'tensors', 'pickle'), "
                      "which is not supported: load it with torch 1.x and torch.save() it again");
  if (layout == "legacy") {
    read_legacy(source, options, f);
  } else {
    read_zip(source, options, f);  // "not a zip archive ..." when it is not one either
  }
  return f;
}

TorchFile read_torch_file(std::string_view bytes, const ReadOptions& options) {
  auto source = std::make_shared<const MemorySource>(bytes);
  TorchFile f = read_torch_file(*source, options);
  TorchFileBuilder(f).set_source(*source, source);
  return f;
}

}  // namespace crosstrain::torchsave
