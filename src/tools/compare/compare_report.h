#pragma once
// Renderers for a CompareResult: terminal text, JSON (with schema_version), CSV (one row per
// record) and a self-contained HTML page (loss curves overlaid, per-layer cosine and max-error
// profiles, the first divergence). Pure functions of the result: nothing is recomputed here.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/json_stream.h"
#include "tools/compare/dump_compare.h"

namespace crosstrain::compare {

struct ConsoleOptions {
  bool all_rows = false;  // every record, not only the divergence and the records that did not pass
  size_t max_rows = 40;   // cap on the "did not pass" table unless all_rows
};

// The last line of the terminal report: "verdict: runs AGREE", "... DIFFER", "verdict: NOTHING COMPARED: ...".
std::string verdict_line(const CompareResult& r);
std::string render_compare_console(const CompareResult& r, const ConsoleOptions& options = {});
nlohmann::json compare_to_json(const CompareResult& r);
// The same document for writing record by record (report::write_json_streamed): the skeleton
// holds everything but "tensors" and "loss"/"curve", made one entry at a time as they are
// written. `r` must outlive the document.
report::StreamedJson compare_to_streamed_json(const CompareResult& r);
nlohmann::json compare_skeleton(const CompareResult& r);
// The two arrays of `r`'s document placed under the JSON pointer `at` ("" for the root,
// "/ranks/0/report" inside the ranks' document).
void add_compare_arrays(const CompareResult& r, const std::string& at, std::vector<report::StreamedArray>& arrays);
std::string compare_to_csv(const CompareResult& r);
// The CSV's columns and rows, for documents that hold several results (one per rank).
std::vector<std::string> compare_csv_header();
std::vector<std::vector<std::string>> compare_csv_rows(const CompareResult& r);
std::string compare_to_html(const CompareResult& r);

}  // namespace crosstrain::compare
