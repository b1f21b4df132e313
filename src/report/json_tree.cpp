#include "report/json_tree.h"

#include <stdexcept>

#include "report/json_scanner.h"

namespace crosstrain::report {

namespace {

// Costs of nlohmann::json's parts on a 64-bit libstdc++, allocator overhead included.
constexpr uint64_t kValue = 16;        // a value in its parent
constexpr uint64_t kContainer = 64;    // a std::map or std::vector allocated for an object or array
constexpr uint64_t kMember = 96;       // a map node with its key string
constexpr uint64_t kString = 48;       // a string value's std::string, allocated

uint64_t walk(JsonScanner& js, int depth) {
  if (depth > kMaxJsonDepth)
    js.fail("JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (the limit of crosstrain's readers)");
  const char c = js.peek();
  if (c == '{' || c == '[') {
    js.expect(c, "opening a value");
    const char close = c == '{' ? '}' : ']';
    uint64_t bytes = kValue + kContainer;
    bool first = true;
    while (js.next_member(first, close)) {
      if (close == '}') {
        bytes += kMember + js.read_string().size();
        js.expect(':', "after an object key");
      }
      bytes += walk(js, depth + 1);
    }
    return bytes;
  }
  if (c == '"') return kValue + kString + js.read_string().size();
  js.skip_value();
  return kValue;
}

}  // namespace

uint64_t json_tree_bytes(const std::string& text, const std::string& file) {
  JsonScanner js(text.data(), text.size(), file);
  const uint64_t bytes = walk(js, 0);
  if (!js.at_end()) js.fail("text after the JSON document");
  return bytes;
}

nlohmann::json parse_json_tree(const std::string& text, const std::string& file, uint64_t max_tree_bytes) {
  const uint64_t bytes = json_tree_bytes(text, file);
  if (bytes > max_tree_bytes)
    throw std::runtime_error(file + ": its JSON tree would take about " + std::to_string(bytes >> 20) + " MiB, more than the " +
                             std::to_string(max_tree_bytes >> 20) + " MiB allowed for it");
  // Validated above: nlohmann accepts what the scanner accepted, except Python's NaN/Infinity.
  return nlohmann::json::parse(text);
}

}  // namespace crosstrain::report
