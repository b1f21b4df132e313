#pragma once
// A whole JSON document as a tree (nlohmann::json), for the few readers that need one (side files
// of other tools, small messages), with the costs of a tree bounded before it is built.
//
// A tree costs far more than its text where the text is dense: 16 MiB of '[' is 1.3 GB as
// nlohmann values, `[[],[],...]` about 20 bytes per byte. So the text is first walked with the
// JsonScanner, which validates it in place (nesting at most kMaxJsonDepth) and estimates the
// tree's bytes; only a document within `max_tree_bytes` is parsed. Failures throw
// JsonFormatError ("FILE: byte N: ...") for text that is not JSON or nests too deep, and
// std::runtime_error ("FILE: its JSON tree would take about N MiB, more than the M MiB allowed")
// for a document too costly as a tree.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace crosstrain::report {

// The bytes a tree of `text` would take, about (nlohmann's values, containers, keys and strings,
// with allocator overhead); validates `text` as parse_json_tree does.
uint64_t json_tree_bytes(const std::string& text, const std::string& file);

nlohmann::json parse_json_tree(const std::string& text, const std::string& file, uint64_t max_tree_bytes);

// A budget for a file read whole: a few bytes per byte of text, plus a constant for small files.
inline uint64_t tree_budget_for(uint64_t text_bytes) { return 8 * text_bytes + (uint64_t{64} << 20); }

}  // namespace crosstrain::report
