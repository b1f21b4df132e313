#include "core/torchsave/torch_file.h"

#include <limits>
#include <sstream>
#include <unordered_set>
#include <utility>
#include <vector>

namespace crosstrain::torchsave {
namespace {

std::string key_text(const Node& k) {
  if (k.kind == NodeKind::String) return "['" + k.text + "']";
  if (k.kind == NodeKind::Int) return "[" + std::to_string(k.integer) + "]";
  return "[?]";
}

// Names every tensor reachable from the root by its first path (depth-first, without recursion;
// each container is entered once, so shared or cyclic containers cost nothing extra).
std::unordered_map<uint32_t, std::string> name_tensors(const Pickle& p) {
  std::unordered_map<uint32_t, std::string> names;
  std::unordered_set<uint32_t> entered;
  std::vector<std::pair<uint32_t, std::string>> todo{{p.root, ""}};
  while (!todo.empty()) {
    auto [i, path] = std::move(todo.back());
    todo.pop_back();
    const Node& n = p.nodes[i];
    if (n.kind == NodeKind::Tensor) {
      names.emplace(i, path.empty() ? "(the root)" : path);
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

}  // namespace

TorchFile read_torch_file(std::string_view bytes, bool check_crc) {
  ZipArchive zip(bytes, check_crc);
  const std::string& first = zip.first_name();
  const size_t slash = first.find('/');
  if (slash == std::string::npos) throw FormatError("not a torch.save() archive (records are not in one folder)");
  const std::string prefix = first.substr(0, slash + 1);
  if (!zip.contains(prefix + "data.pkl")) throw FormatError("not a torch.save() archive (no " + prefix + "data.pkl)");
  if (zip.contains(prefix + "byteorder") && zip.record(prefix + "byteorder") != "little")
    throw FormatError("a big-endian archive (byteorder '" + std::string(zip.record(prefix + "byteorder")) +
                      "') is not supported");
  TorchFile f;
  f.pickle = read_pickle(zip.record(prefix + "data.pkl"));
  f.tensor_names = name_tensors(f.pickle);
  const auto& nodes = f.pickle.nodes;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const Node& t = nodes[i];
    if (t.kind != NodeKind::Tensor) continue;
    auto named = f.tensor_names.find(i);
    const std::string name = "tensor " + (named == f.tensor_names.end() ? std::string("(unnamed)") : named->second);
    const Node& s = nodes[t.storage];
    const std::string record = "data/" + s.text;
    if (!f.storage_bytes.count(t.storage)) {
      std::string_view data;
      try {
        data = zip.record(prefix + record);
      } catch (const FormatError& e) {
        throw FormatError(name + ": " + e.what());
      }
      const uint64_t item = dtype_size(s.dtype);
      if (static_cast<uint64_t>(s.numel) > std::numeric_limits<uint64_t>::max() / item ||
          data.size() < static_cast<uint64_t>(s.numel) * item) {
        std::ostringstream os;
        os << name << ": storage record " << record << " holds " << data.size() << " bytes, fewer than its "
           << s.numel << " " << dtype_name(s.dtype) << " elements need (truncated or corrupt)";
        throw FormatError(os.str());
      }
      f.storage_bytes.emplace(t.storage, data.substr(0, static_cast<size_t>(s.numel) * item));
    }
    int64_t needed = 0;
    if (!reach(t, &needed) || needed > s.numel) {
      std::ostringstream os;
      os << name << " of size " << dims_text(t.sizes) << ", stride " << dims_text(t.strides) << " and offset "
         << t.offset << " reaches past its storage (" << record << ": " << s.numel << " " << dtype_name(s.dtype)
         << " elements)";
      throw FormatError(os.str());
    }
  }
  return f;
}

}  // namespace crosstrain::torchsave
