#include "tools/analyze/call_sites.h"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <optional>
#include <tuple>
#include <stdexcept>

#include "report/input_file.h"
#include "report/json_scanner.h"

namespace crosstrain::analyze {

namespace {

namespace fs = std::filesystem;

// About a million calls: far more than the steps of a cycle make, and parsed in well under a second.
constexpr uint64_t kMaxSideFileBytes = uint64_t{64} << 20;
constexpr const char* kSuffix = ".sources.json";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string call_sites_path_of(const std::string& trace_path) {
  std::string stem = trace_path;
  for (const char* ext : {".json.gz", ".json"})
    if (ends_with(stem, ext)) {
      stem.resize(stem.size() - std::string(ext).size());
      break;
    }
  return stem + kSuffix;
}

namespace {

using report::JsonScanner;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

bool starts_number(char c) { return c == '-' || (c >= '0' && c <= '9'); }

// A member's value when it has the type asked for; anything else is skipped (within the scanner's
// nesting limit) and reads as absent.
std::optional<int64_t> int_value(JsonScanner& js) {
  if (!starts_number(js.peek())) return js.skip_value(), std::nullopt;
  const report::JsonNumber n = js.read_number();
  if (!n.integral || std::fabs(n.value) >= 9e18) return std::nullopt;
  return n.whole;
}

std::optional<std::string> string_value(JsonScanner& js) {
  if (js.peek() != '"') return js.skip_value(), std::nullopt;
  return std::string(js.read_string());
}

int bool_value(JsonScanner& js) {
  const char c = js.peek();
  if (c != 't' && c != 'f') return js.skip_value(), -1;
  return js.read_bool() ? 1 : 0;
}

// Calls `member(key)` for each member of the object at the scanner (the callback reads the value).
template <class Member>
void for_each_member(JsonScanner& js, Member member) {
  js.expect('{', "opening an object");
  bool first = true;
  while (js.next_member(first, '}')) {
    const std::string key(js.read_string());
    js.expect(':', "after an object key");
    member(key);
  }
}

// Calls `element()` for each element of the array that `key` holds (the callback reads it).
template <class Element>
void for_each_element(JsonScanner& js, const char* key, Element element) {
  require(js.peek() == '[', std::string("\"") + key + "\" is not an array");
  js.expect('[', "opening an array");
  bool first = true;
  while (js.next_member(first, ']')) element();
}

// One entry [v0, v1, ...]: `at(i)` reads element i and says whether it was what the entry needs;
// elements past `needed` are skipped. The count of elements, or 0 when the entry is not an array,
// is too short or holds a wrong element.
template <class At>
size_t read_tuple(JsonScanner& js, size_t needed, At at) {
  if (js.peek() != '[') return 0;
  js.expect('[', "opening an entry");
  bool first = true;
  size_t n = 0;
  while (js.next_member(first, ']')) {
    if (n < needed) {
      if (!at(n)) return 0;
    } else {
      js.skip_value();
    }
    ++n;
  }
  return n >= needed ? n : 0;
}

void read_files(JsonScanner& js, CallSites& out) {
  for_each_element(js, "files", [&] {
    std::string name, kind;
    const bool ok = read_tuple(js, 2, [&](size_t i) {
      auto v = string_value(js);
      if (v) (i == 0 ? name : kind) = std::move(*v);
      return v.has_value();
    });
    require(ok, "a \"files\" entry is not [name, kind, ...]");
    out.files.push_back({std::move(name), kind == "user"});
  });
}

void read_calls(JsonScanner& js, CallSites& out) {
  for_each_element(js, "calls", [&] {
    int64_t v[3] = {0, 0, 0};
    const bool ok = read_tuple(js, 3, [&](size_t i) {
      auto x = int_value(js);
      if (x) v[i] = *x;
      return x && (i != 1 || *x >= 0);
    });
    require(ok, "a \"calls\" entry is not [start_ns, file index, line, ...]");
    out.calls.push_back({v[0], static_cast<uint32_t>(std::min<int64_t>(v[1], UINT32_MAX)),
                         static_cast<int32_t>(std::clamp<int64_t>(v[2], 0, INT32_MAX))});
  });
}

void read_lines(JsonScanner& js, CallSites& out) {
  for_each_element(js, "lines", [&] {
    CodeLine l;
    int64_t v[2] = {0, 0};
    const size_t n = read_tuple(js, 3, [&](size_t i) {
      if (i == 2) {
        auto t = string_value(js);
        if (t) l.text = t->size() > 200 ? t->substr(0, 197) + "..." : std::move(*t);
        return t.has_value();
      }
      auto x = int_value(js);
      if (x) v[i] = *x;
      return x && (i != 0 || *x >= 0);
    });
    require(n == 3, "a \"lines\" entry is not [file index, line, text]");
    l.file = static_cast<uint32_t>(std::min<int64_t>(v[0], UINT32_MAX));
    l.line = static_cast<int32_t>(std::clamp<int64_t>(v[1], 0, INT32_MAX));
    out.code.push_back(std::move(l));
  });
}

void read_made_at(JsonScanner& js, DataLoaderSettings& s) {
  if (js.peek() != '{') return js.skip_value();
  std::string file;
  int64_t line = -1;
  for_each_member(js, [&](const std::string& key) {
    if (key == "file") file = string_value(js).value_or("");
    else if (key == "line") line = int_value(js).value_or(-1);
    else if (key == "text") s.made_text = string_value(js).value_or("").substr(0, 200);
    else js.skip_value();
  });
  if (!file.empty() && line >= 0) s.made_at = file.substr(0, 300) + ":" + std::to_string(line);
}

void read_loaders(JsonScanner& js, CallSites& out) {
  for_each_element(js, "dataloaders", [&] {
    require(js.peek() == '{', "a \"dataloaders\" entry is not an object");
    DataLoaderSettings s;
    for_each_member(js, [&](const std::string& key) {
      if (key == "num_workers") s.num_workers = int_value(js).value_or(-1);
      else if (key == "pin_memory") s.pin_memory = bool_value(js);
      else if (key == "persistent_workers") s.persistent_workers = bool_value(js);
      else if (key == "prefetch_factor") s.prefetch_factor = int_value(js).value_or(-1);
      else if (key == "batch_size") s.batch_size = int_value(js).value_or(-1);
      else if (key == "dataset") s.dataset = string_value(js).value_or("").substr(0, 100);
      else if (key == "iterators") s.iterators = std::max<int64_t>(0, int_value(js).value_or(0));
      else if (key == "made_at") read_made_at(js, s);
      else js.skip_value();
    });
    out.loaders.push_back(std::move(s));
  });
}

// Fills `out` from the document, read in one pass without a tree (the scanner limits nesting);
// throws std::invalid_argument naming the first thing wrong, JsonFormatError for what is not JSON.
void parse(JsonScanner& js, CallSites& out) {
  require(js.peek() == '{', "not a crosstrain call-site file (no \"format\": \"crosstrain-call-sites\")");
  std::string format;
  int64_t version = -1, cpus = -1;
  for_each_member(js, [&](const std::string& key) {
    if (key == "format") format = string_value(js).value_or("");
    else if (key == "version") version = int_value(js).value_or(-1);
    else if (key == "cpus") cpus = int_value(js).value_or(-1);
    else if (key == "files") read_files(js, out);
    else if (key == "calls") read_calls(js, out);
    else if (key == "lines") read_lines(js, out);
    else if (key == "dataloaders") read_loaders(js, out);
    else js.skip_value();
  });
  require(js.at_end(), "text after the document");
  require(format == "crosstrain-call-sites", "not a crosstrain call-site file (no \"format\": \"crosstrain-call-sites\")");
  require(version == 1, "version " + std::to_string(version) + " (this build reads 1)");
  out.cpus = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(cpus, 1 << 20)));
  // File indexes are checked once every member is read: JSON does not order an object's members.
  for (const auto& c : out.calls)
    require(c.file < out.files.size(), "a \"calls\" entry is not [start_ns, file index, line, ...]");
  for (const auto& l : out.code)
    require(l.file < out.files.size(), "a \"lines\" entry is not [file index, line, text]");
  std::stable_sort(out.calls.begin(), out.calls.end(),
                   [](const CallSite& a, const CallSite& b) { return a.start_ns < b.start_ns; });
  // A line given twice keeps its last text, as a later entry replaces an earlier one.
  std::stable_sort(out.code.begin(), out.code.end(), [](const CodeLine& a, const CodeLine& b) {
    return std::tie(a.file, a.line) < std::tie(b.file, b.line);
  });
  std::vector<CodeLine> unique;
  for (auto& l : out.code) {
    if (!unique.empty() && unique.back().file == l.file && unique.back().line == l.line) unique.back() = std::move(l);
    else unique.push_back(std::move(l));
  }
  out.code = std::move(unique);
}

}  // namespace

const CallSite* CallSites::at(int64_t start_ns) const {
  auto it = std::lower_bound(calls.begin(), calls.end(), start_ns,
                             [](const CallSite& c, int64_t v) { return c.start_ns < v; });
  return it != calls.end() && it->start_ns == start_ns ? &*it : nullptr;
}

std::string CallSites::label(const CallSite& c) const {
  return (c.file < files.size() ? files[c.file].name : "?") + ":" + std::to_string(c.line);
}

std::string CallSites::text(const CallSite& c) const {
  auto it = std::lower_bound(code.begin(), code.end(), std::pair{c.file, c.line}, [](const CodeLine& l, const auto& key) {
    return std::pair{l.file, l.line} < key;
  });
  return it != code.end() && it->file == c.file && it->line == c.line ? it->text : "";
}

bool is_call_sites_file(const std::string& name) { return ends_with(name, kSuffix); }

CallSites read_call_sites(const std::string& trace_path, std::vector<std::string>* notes) {
  CallSites out;
  const std::string path = call_sites_path_of(trace_path);
  std::error_code ec;
  if (!fs::exists(path, ec)) return out;
  try {
    const std::string text = report::read_regular_file(path, kMaxSideFileBytes, "call-site file");
    CallSites parsed;
    JsonScanner js(text.data(), text.size(), path);
    try {
      parse(js, parsed);
    } catch (const report::JsonFormatError& e) {
      throw std::invalid_argument("byte " + std::to_string(e.offset()) + ": " + e.reason());
    }
    parsed.present = true;
    parsed.path = path;
    return parsed;
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (why.size() > 300) why = why.substr(0, 300) + "...";
    if (notes != nullptr) notes->push_back(path + ": not used, no source lines for its trace (" + why + ")");
  }
  return out;
}

}  // namespace crosstrain::analyze
