#include "core/torchsave/legacy_format.h"

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/torchsave/zip_archive.h"

namespace crosstrain::torchsave {
namespace {

// pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2): PROTO 2, LONG1 of 10 bytes, STOP.
constexpr std::string_view kMagic("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e", 15);
constexpr int64_t kProtocolVersion = 1001;

const Node* dict_get(const Pickle& p, const Node& dict, std::string_view key) {
  for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const Node& k = p.nodes[dict.items[i]];
    if (k.kind == NodeKind::String && k.text == key) return &p.nodes[dict.items[i + 1]];
  }
  return nullptr;
}

class LegacyReader {
 public:
  LegacyReader(std::string_view bytes, bool opaque) : bytes_(bytes), opaque_(opaque) {}

  LegacyFile read() {
    pos_ = kMagic.size();
    const Pickle version = next("the protocol version");
    const Node& v = version.nodes[version.root];
    if (v.kind != NodeKind::Int || v.integer != kProtocolVersion)
      throw FormatError("legacy torch.save file: protocol version other than 1001");
    const Pickle info = next("sys_info");
    const Node& root = info.nodes[info.root];
    const Node* little = root.kind == NodeKind::Dict ? dict_get(info, root, "little_endian") : nullptr;
    if (!little || little->kind != NodeKind::Bool)
      throw FormatError("legacy torch.save file: sys_info without little_endian");
    if (!little->integer) throw FormatError("a big-endian legacy file is not supported");

    LegacyFile f;
    f.pickle = next("the object", opaque_, true);
    const Pickle keys = next("the storage keys");
    const Node& list = keys.nodes[keys.root];
    if (list.kind != NodeKind::List) throw FormatError("legacy torch.save file: the storage keys are not a list");

    // Storage nodes by key; all of one key must agree on type and size (torch keeps one storage).
    std::map<std::string, std::vector<uint32_t>> by_key;
    for (uint32_t i = 0; i < f.pickle.nodes.size(); ++i)
      if (f.pickle.nodes[i].kind == NodeKind::Storage) by_key[f.pickle.nodes[i].text].push_back(i);
    for (uint32_t k : list.items) {
      const Node& key = keys.nodes[k];
      if (key.kind != NodeKind::String) throw FormatError("legacy torch.save file: a storage key that is not a string");
      auto it = by_key.find(key.text);
      if (it == by_key.end() || it->second.empty())
        throw FormatError("legacy torch.save file: storage " + key.text + " is listed twice or used by no tensor");
      const Node& s = f.pickle.nodes[it->second.front()];
      const size_t at = pos_;
      const int64_t count = int64_le();
      if (count != s.numel)
        throw FormatError("legacy torch.save file: storage " + key.text + " at byte " + std::to_string(at) +
                          " holds " + std::to_string(count) + " elements, its tensors' storage " +
                          std::to_string(s.numel) + " (corrupt)");
      const uint64_t item = dtype_size(s.dtype);
      if (static_cast<uint64_t>(count) > (bytes_.size() - pos_) / item)
        throw FormatError("legacy torch.save file: storage " + key.text + " at byte " + std::to_string(at) + " needs " +
                          std::to_string(count) + " " + dtype_name(s.dtype) + " elements; the file ends after " +
                          std::to_string(bytes_.size() - pos_) + " bytes (truncated)");
      const std::string_view data = bytes_.substr(pos_, static_cast<size_t>(count) * item);
      pos_ += data.size();
      for (uint32_t n : it->second) {
        const Node& other = f.pickle.nodes[n];
        if (other.dtype != s.dtype || other.numel != s.numel)
          throw FormatError("legacy torch.save file: storage " + key.text + " is used with two types or sizes");
        f.storage_bytes.emplace(n, data);
      }
      it->second.clear();  // a key listed twice is refused above
    }
    for (const auto& [key, nodes] : by_key)
      if (!nodes.empty()) throw FormatError("legacy torch.save file: storage " + key + " is not in the storage list");
    return f;
  }

 private:
  Pickle next(const char* what, bool opaque = false, bool storages = false) {
    PickleOptions o;
    o.name = std::string("legacy torch.save file: ") + what;
    o.origin = pos_;
    o.opaque_objects = opaque;
    o.legacy_storages = storages;
    Pickle p = read_pickle(bytes_.substr(pos_), o);
    pos_ += p.end;
    return p;
  }
  int64_t int64_le() {
    if (bytes_.size() - pos_ < 8)
      throw FormatError("legacy torch.save file: ends inside a storage's element count (truncated)");
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes_[pos_ + static_cast<size_t>(i)]);
    pos_ += 8;
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw FormatError("legacy torch.save file: a negative storage element count (corrupt)");
    return static_cast<int64_t>(v);
  }

  std::string_view bytes_;
  bool opaque_;
  size_t pos_ = 0;
};

}  // namespace

bool is_legacy_torch_file(std::string_view bytes) { return bytes.substr(0, kMagic.size()) == kMagic; }

LegacyFile read_legacy_torch_file(std::string_view bytes, bool opaque_objects) {
  if (!is_legacy_torch_file(bytes)) throw FormatError("not a legacy torch.save file (no magic number)");
  return LegacyReader(bytes, opaque_objects).read();
}

}  // namespace crosstrain::torchsave
