#pragma once
// A JSON report written while it is produced, for documents whose long arrays (one entry per
// compared record: a million records) would cost far more held as a tree than written as text.
//
// The document is a skeleton (a small nlohmann::json) and arrays placed in it by JSON pointer
// ("/tensors", "/ranks/0/report/tensors"), each made one element at a time as it is written and
// dropped after. The bytes are exactly those write_json() writes for the skeleton with the arrays
// filled in (2-space indentation, invalid UTF-8 replaced, a final newline), so readers see the same
// document; only the memory differs: the skeleton plus one element.
//
//   report::StreamedJson doc{skeleton, {{"/tensors", rows.size(), [&](size_t i) { return row_json(rows[i]); }}}};
//   report::write_json_streamed(doc, "report.json");   // atomic, as write_file_atomic()
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/output.h"

namespace crosstrain::report {

struct StreamedArray {
  std::string pointer;  // where the array goes; the skeleton's value there (if any) is replaced
  size_t size = 0;
  std::function<nlohmann::json(size_t)> element;  // element i, called once for each i in order
};

struct StreamedJson {
  nlohmann::json skeleton;
  std::vector<StreamedArray> arrays;
};

// Writes the document to `path` ("-": stdout) the way write_json() writes a whole one: through
// write_file_atomic(), so a failure part-way leaves the previous file in place.
void write_json_streamed(const StreamedJson& doc, const std::string& path);

// The document's text to `sink`, in pieces of about 64 KiB. std::invalid_argument when a pointer
// names no place in the skeleton (a parent missing or not an object or array).
void render_json_streamed(const StreamedJson& doc, const ByteSink& sink);

// The whole document as a tree (for tests and small documents).
nlohmann::json materialize(const StreamedJson& doc);

}  // namespace crosstrain::report
