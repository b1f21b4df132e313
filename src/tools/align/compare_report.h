#pragma once
// Renderers for a CompareResult: terminal text, JSON (with schema_version), CSV (one row per
// record) and a self-contained HTML page (loss curves overlaid, per-layer cosine and max-error
// profiles, the first divergence). Pure functions of the result: nothing is recomputed here.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/align/dump_compare.h"

namespace crosstrain::align {

struct ConsoleOptions {
  bool all_rows = false;  // every record, not only the divergence and the records that did not pass
  size_t max_rows = 40;   // cap on the "did not pass" table unless all_rows
};

// The last line of the terminal report: "verdict: runs AGREE", "... DIFFER", "verdict: NOTHING COMPARED: ...".
std::string verdict_line(const CompareResult& r);
std::string render_compare_console(const CompareResult& r, const ConsoleOptions& options = {});
nlohmann::json compare_to_json(const CompareResult& r);
std::string compare_to_csv(const CompareResult& r);
// The CSV's columns and rows, for documents that hold several results (one per rank).
std::vector<std::string> compare_csv_header();
std::vector<std::vector<std::string>> compare_csv_rows(const CompareResult& r);
std::string compare_to_html(const CompareResult& r);

}  // namespace crosstrain::align
