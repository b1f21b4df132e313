#include "report/json_stream.h"

#include <map>
#include <stdexcept>
#include <string_view>

namespace crosstrain::report {

namespace {

using nlohmann::json;

constexpr size_t kPieceBytes = size_t{64} << 10;

std::string text_of(const json& v, int indent) {
  // Invalid UTF-8 in names coming from traces or files must not abort the report (as write_json).
  return v.dump(indent, ' ', false, json::error_handler_t::replace);
}

// RFC 6901: '~' and '/' inside a reference token.
std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// Writes the skeleton as nlohmann's dump(2) does, member by member, and each streamed array in its
// place element by element; pieces go to the sink as they fill.
class Renderer {
 public:
  Renderer(const StreamedJson& doc, const ByteSink& sink) : sink_(sink) {
    for (const auto& a : doc.arrays) at_[a.pointer] = &a;
  }

  void value(const json& v, std::string& pointer, int depth) {
    if (auto it = at_.find(pointer); it != at_.end()) return streamed(*it->second, depth);
    if (v.is_object() && !v.empty()) {
      put("{\n");
      size_t i = 0;
      for (auto it = v.begin(); it != v.end(); ++it, ++i) {
        indent(depth + 1);
        put(text_of(json(it.key()), -1));
        put(": ");
        child(it.value(), pointer, pointer_token(it.key()), depth + 1);
        put(i + 1 < v.size() ? ",\n" : "\n");
      }
      indent(depth);
      put("}");
    } else if (v.is_array() && !v.empty()) {
      put("[\n");
      for (size_t i = 0; i < v.size(); ++i) {
        indent(depth + 1);
        child(v[i], pointer, std::to_string(i), depth + 1);
        put(i + 1 < v.size() ? ",\n" : "\n");
      }
      indent(depth);
      put("]");
    } else {
      put(text_of(v, -1));
    }
  }

  void finish() {
    put("\n");
    if (!buf_.empty()) sink_(buf_.data(), buf_.size());
    buf_.clear();
  }

 private:
  void child(const json& v, std::string& pointer, const std::string& token, int depth) {
    const size_t len = pointer.size();
    pointer += '/';
    pointer += token;
    value(v, pointer, depth);
    pointer.resize(len);
  }

  void streamed(const StreamedArray& a, int depth) {
    if (a.size == 0) return put("[]");
    put("[\n");
    for (size_t i = 0; i < a.size; ++i) {
      indent(depth + 1);
      // The element's own lines move in by this depth; a raw newline occurs in no JSON string.
      const std::string text = text_of(a.element(i), 2);
      size_t from = 0;
      for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', from)) {
        put(std::string_view(text).substr(from, nl + 1 - from));
        indent(depth + 1);
        from = nl + 1;
      }
      put(std::string_view(text).substr(from));
      put(i + 1 < a.size ? ",\n" : "\n");
    }
    indent(depth);
    put("]");
  }

  void indent(int depth) { buf_.append(static_cast<size_t>(2 * depth), ' '); }

  void put(std::string_view s) {
    buf_.append(s.data(), s.size());
    if (buf_.size() >= kPieceBytes) {
      sink_(buf_.data(), buf_.size());
      buf_.clear();
    }
  }

  const ByteSink& sink_;
  std::map<std::string, const StreamedArray*> at_;
  std::string buf_;
};

void check_pointers(const StreamedJson& doc) {
  for (const auto& a : doc.arrays) {
    bool ok = false;
    try {
      ok = !a.pointer.empty() && doc.skeleton.contains(json::json_pointer(a.pointer));
    } catch (const json::exception&) {
      ok = false;
    }
    if (!ok) throw std::invalid_argument("streamed JSON: the skeleton holds no value at " + a.pointer);
  }
}

}  // namespace

void render_json_streamed(const StreamedJson& doc, const ByteSink& sink) {
  check_pointers(doc);
  Renderer r(doc, sink);
  std::string pointer;
  r.value(doc.skeleton, pointer, 0);
  r.finish();
}

void write_json_streamed(const StreamedJson& doc, const std::string& path) {
  check_pointers(doc);
  if (path == "-") {
    render_json_streamed(doc, [](const char* data, size_t size) { write_stdout(std::string(data, size)); });
    return;
  }
  write_file_atomic(path, [&](const ByteSink& sink) { render_json_streamed(doc, sink); });
}

nlohmann::json materialize(const StreamedJson& doc) {
  check_pointers(doc);
  json out = doc.skeleton;
  for (const auto& a : doc.arrays) {
    json arr = json::array();
    for (size_t i = 0; i < a.size; ++i) arr.push_back(a.element(i));
    out[json::json_pointer(a.pointer)] = std::move(arr);
  }
  return out;
}

}  // namespace crosstrain::report
