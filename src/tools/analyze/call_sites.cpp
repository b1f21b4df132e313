#include "tools/analyze/call_sites.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "report/input_file.h"

namespace crosstrain::analyze {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

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

int64_t int_field(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

int bool_field(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_boolean() ? (it->get<bool>() ? 1 : 0) : -1;
}

std::string string_field(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

// Fills `out` from the document; throws std::invalid_argument naming the first thing wrong.
void parse(const json& doc, CallSites& out) {
  require(doc.is_object() && string_field(doc, "format") == "crosstrain-call-sites",
          "not a crosstrain call-site file (no \"format\": \"crosstrain-call-sites\")");
  require(int_field(doc, "version") == 1, "version " + std::to_string(int_field(doc, "version")) + " (this build reads 1)");
  out.cpus = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(int_field(doc, "cpus"), 1 << 20)));
  if (auto f = doc.find("files"); f != doc.end()) {
    require(f->is_array(), "\"files\" is not an array");
    for (const auto& e : *f) {
      require(e.is_array() && e.size() >= 2 && e[0].is_string() && e[1].is_string(), "a \"files\" entry is not [name, kind, ...]");
      out.files.push_back({e[0].get<std::string>(), e[1].get<std::string>() == "user"});
    }
  }
  auto in_files = [&](const json& v) { return v.is_number_unsigned() && v.get<uint64_t>() < out.files.size(); };
  if (auto c = doc.find("calls"); c != doc.end()) {
    require(c->is_array(), "\"calls\" is not an array");
    out.calls.reserve(c->size());
    for (const auto& e : *c) {
      require(e.is_array() && e.size() >= 3 && e[0].is_number_integer() && in_files(e[1]) && e[2].is_number_integer(),
              "a \"calls\" entry is not [start_ns, file index, line, ...]");
      out.calls.push_back({e[0].get<int64_t>(), e[1].get<uint32_t>(),
                           static_cast<int32_t>(std::clamp<int64_t>(e[2].get<int64_t>(), 0, INT32_MAX))});
    }
  }
  if (auto l = doc.find("lines"); l != doc.end()) {
    require(l->is_array(), "\"lines\" is not an array");
    for (const auto& e : *l) {
      require(e.is_array() && e.size() == 3 && in_files(e[0]) && e[1].is_number_integer() && e[2].is_string(),
              "a \"lines\" entry is not [file index, line, text]");
      std::string text = e[2].get<std::string>();
      if (text.size() > 200) text = text.substr(0, 197) + "...";
      out.code[{e[0].get<uint32_t>(), static_cast<int32_t>(std::clamp<int64_t>(e[1].get<int64_t>(), 0, INT32_MAX))}] = text;
    }
  }
  if (auto d = doc.find("dataloaders"); d != doc.end()) {
    require(d->is_array(), "\"dataloaders\" is not an array");
    for (const auto& e : *d) {
      require(e.is_object(), "a \"dataloaders\" entry is not an object");
      DataLoaderSettings s;
      s.num_workers = int_field(e, "num_workers");
      s.pin_memory = bool_field(e, "pin_memory");
      s.persistent_workers = bool_field(e, "persistent_workers");
      s.prefetch_factor = int_field(e, "prefetch_factor");
      s.batch_size = int_field(e, "batch_size");
      s.dataset = string_field(e, "dataset").substr(0, 100);
      s.iterators = std::max<int64_t>(0, int_field(e, "iterators"));
      if (auto m = e.find("made_at"); m != e.end() && m->is_object()) {
        const std::string file = string_field(*m, "file");
        const int64_t line = int_field(*m, "line");
        if (!file.empty() && line >= 0) s.made_at = file.substr(0, 300) + ":" + std::to_string(line);
        s.made_text = string_field(*m, "text").substr(0, 200);
      }
      out.loaders.push_back(std::move(s));
    }
  }
  std::stable_sort(out.calls.begin(), out.calls.end(),
                   [](const CallSite& a, const CallSite& b) { return a.start_ns < b.start_ns; });
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
  auto it = code.find({c.file, c.line});
  return it == code.end() ? "" : it->second;
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
    parse(json::parse(text), parsed);
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
