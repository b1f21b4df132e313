#include "core/torchsave/legacy_format.h"

#include <limits>
#include <vector>

namespace crosstrain::torchsave {
namespace {

// The magic number 0x1950a86a20f9469cfc6c as pickle.dumps writes it: LONG1 of 10 bytes and STOP
// after PROTO 2 or 3 (PROTO 4 and 5 put a FRAME before it), as the decimal text of LONG at
// protocols 0 and 1.
constexpr std::string_view kMagicLong1("\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e", 13);
constexpr std::string_view kMagicFrame("\x95\x0d\x00\x00\x00\x00\x00\x00\x00", 9);
constexpr std::string_view kMagicText("L119547037146038801333356L\n.");
constexpr size_t kMagicSize = 2 + kMagicLong1.size();  // protocols 2 and 3
constexpr int64_t kProtocolVersion = 1001;

const Node* dict_get(const Pickle& p, uint32_t dict, std::string_view key) {
  const auto& items = p.items(dict);
  for (size_t i = 0; i + 1 < items.size(); i += 2)
    if (p.node(items[i]).kind == NodeKind::String && p.text(items[i]) == key) return &p.node(items[i + 1]);
  return nullptr;
}

class LegacyReader {
 public:
  LegacyReader(const ByteSource& source, bool opaque) : source_(source), opaque_(opaque) {}

  LegacyFile read() {
    pos_ = kMagicSize;
    const Pickle version = next("the protocol version");
    const Node& v = version.node(version.root);
    if (v.kind != NodeKind::Int || v.integer != kProtocolVersion)
      throw FormatError("legacy torch.save file: protocol version other than 1001");
    const Pickle info = next("sys_info");
    const Node* little =
        info.node(info.root).kind == NodeKind::Dict ? dict_get(info, info.root, "little_endian") : nullptr;
    if (!little || little->kind != NodeKind::Bool)
      throw FormatError("legacy torch.save file: sys_info without little_endian");
    if (!little->integer) throw FormatError("a big-endian legacy file is not supported");

    LegacyFile f;
    f.pickle = next("the object", opaque_, true);
    const Pickle keys = next("the storage keys");
    if (keys.node(keys.root).kind != NodeKind::List)
      throw FormatError("legacy torch.save file: the storage keys are not a list");

    // Storage nodes by key; all of one key must agree on type and size (torch keeps one storage).
    std::map<std::string_view, std::vector<uint32_t>> by_key;
    for (uint32_t i = 0; i < f.pickle.nodes.size(); ++i)
      if (f.pickle.nodes[i].kind == NodeKind::Storage) by_key[f.pickle.text(i)].push_back(i);
    for (uint32_t k : keys.items(keys.root)) {
      if (keys.node(k).kind != NodeKind::String)
        throw FormatError("legacy torch.save file: a storage key that is not a string");
      const std::string_view key = keys.text(k);
      auto it = by_key.find(key);
      if (it == by_key.end() || it->second.empty())
        throw FormatError("legacy torch.save file: storage " + shown(key) + " is listed twice or used by no tensor");
      const uint32_t first = it->second.front();
      const Node& s = f.pickle.node(first);
      const int64_t numel = f.pickle.storage(first).numel;
      const uint64_t at = pos_;
      const int64_t count = int64_le();
      if (count != numel)
        throw FormatError("legacy torch.save file: storage " + shown(key) + " at byte " + std::to_string(at) +
                          " holds " + std::to_string(count) + " elements, its tensors' storage " +
                          std::to_string(numel) + " (corrupt)");
      const uint64_t item = dtype_size(s.dtype);
      if (static_cast<uint64_t>(count) > (source_.size() - pos_) / item)
        throw FormatError("legacy torch.save file: storage " + shown(key) + " at byte " + std::to_string(at) +
                          " needs " + std::to_string(count) + " " + dtype_name(s.dtype) +
                          " elements; the file ends after " + std::to_string(source_.size() - pos_) +
                          " bytes (truncated)");
      for (uint32_t n : it->second)
        if (f.pickle.node(n).dtype != s.dtype || f.pickle.storage(n).numel != numel)
          throw FormatError("legacy torch.save file: storage " + shown(key) + " is used with two types or sizes");
      f.storage_offsets.emplace(std::string(key), pos_);
      pos_ += static_cast<uint64_t>(count) * item;
      it->second.clear();  // a key listed twice is refused above
    }
    for (const auto& [key, nodes] : by_key)
      if (!nodes.empty())
        throw FormatError("legacy torch.save file: storage " + shown(key) + " is not in the storage list");
    return f;
  }

 private:
  Pickle next(const char* what, bool opaque = false, bool storages = false) {
    PickleOptions o;
    o.name = std::string("legacy torch.save file: ") + what;
    o.origin = pos_;
    o.opaque_objects = opaque;
    o.legacy_storages = storages;
    Pickle p = read_pickle(source_, pos_, o);
    pos_ += p.end;
    return p;
  }
  int64_t int64_le() {
    if (source_.size() - pos_ < 8)
      throw FormatError("legacy torch.save file: ends inside a storage's element count (truncated)");
    const std::string b = source_.read_string(pos_, 8);
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[static_cast<size_t>(i)]);
    pos_ += 8;
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw FormatError("legacy torch.save file: a negative storage element count (corrupt)");
    return static_cast<int64_t>(v);
  }

  const ByteSource& source_;
  bool opaque_;
  uint64_t pos_ = 0;
};

}  // namespace

int legacy_pickle_protocol(std::string_view start) {
  if (start.substr(0, kMagicText.size()) == kMagicText) return 0;
  if (start.size() < 2 || start[0] != '\x80' || start[1] < 2 || start[1] > 5) return -1;
  const int protocol = start[1];
  std::string_view rest = start.substr(2);
  if (protocol >= 4) {
    if (rest.substr(0, kMagicFrame.size()) != kMagicFrame) return -1;
    rest = rest.substr(kMagicFrame.size());
  }
  return rest.substr(0, kMagicLong1.size()) == kMagicLong1 ? protocol : -1;
}

bool is_legacy_torch_file(std::string_view start) { return legacy_pickle_protocol(start) >= 0; }

LegacyFile read_legacy_torch_file(const ByteSource& source, bool opaque_objects) {
  const int protocol =
      legacy_pickle_protocol(source.read_string(0, std::min<uint64_t>(source.size(), kLegacyMagicMaxSize)));
  if (protocol < 0) throw FormatError("not a legacy torch.save file (no magic number)");
  // What torch.load(weights_only=True) reads of this format; the others it refuses too, at the
  // magic number's first opcode (LONG at protocols 0 and 1, FRAME at 4 and 5).
  if (protocol != 2 && protocol != 3)
    throw FormatError(std::string("a legacy torch.save file pickled at protocol ") +
                      (protocol == 0 ? "0 or 1" : std::to_string(protocol)) +
                      ", which neither crosstrain nor torch.load(weights_only=True) reads (they read protocols 2 "
                      "and 3): load it in Python with weights_only=False if you trust it and torch.save() it again");
  return LegacyReader(source, opaque_objects).read();
}

}  // namespace crosstrain::torchsave
