// Renderers for OpCheckResult: a terminal table and JSON. Nothing is recomputed here.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "report/output.h"
#include "report/table.h"
#include "report/units.h"
#include "tools/opcheck/op_check.h"

namespace crosstrain::opcheck {

namespace {

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

std::string render_op_check_console(const OpCheckResult& r) {
  bool perf = false;
  for (const auto& row : r.rows) perf = perf || row.ms.has_value();
  std::vector<std::string> headers = {"op", "shape", "output", "dtype", "max abs", "max rel", "cosine", "tol", "result"};
  if (perf) headers.push_back("time");
  report::Table t(headers);
  t.align(1, report::Align::Left).align(2, report::Align::Left).align(3, report::Align::Left)
      .align(8, report::Align::Left);
  for (const auto& row : r.rows) {
    std::vector<std::string> cells = {row.op, row.shape, row.output, row.dtype};
    if (!row.error.empty()) {
      cells.insert(cells.end(), {"-", "-", "-", sci(row.tolerance), "FAIL: " + row.error});
    } else {
      char cos[32];
      std::snprintf(cos, sizeof cos, "%.8f", row.cosine);
      cells.insert(cells.end(), {sci(row.max_abs), sci(row.max_rel), cos, sci(row.tolerance), row.pass ? "pass" : "FAIL"});
    }
    if (perf) cells.push_back(report::format_ms(row.ms));
    t.add_row(cells);
  }
  std::string out = "op-check on " + r.device + " in " + r.precision + " against the CPU in float64\n\n" + t.render();
  out += "\n" + std::to_string(r.passed) + " passed, " + std::to_string(r.failed) + " failed\n";
  if (!r.emulation_note.empty()) out += "note: " + r.emulation_note + "\n";
  return out;
}

nlohmann::json op_check_to_json(const OpCheckResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json j = {{"op", row.op},           {"shape", row.shape},
                        {"output", row.output},   {"dtype", row.dtype},
                        {"max_abs", number_or_null(row.max_abs)}, {"max_rel", number_or_null(row.max_rel)},
                        {"cosine", number_or_null(row.cosine)},   {"tolerance", row.tolerance},
                        {"pass", row.pass}};
    j["time_ms"] = row.ms ? nlohmann::json(*row.ms) : nlohmann::json(nullptr);
    if (!row.error.empty()) j["error"] = row.error;
    rows.push_back(j);
  }
  nlohmann::json doc = {{"schema_version", report::kJsonSchemaVersion},
                        {"kind", "op_check"},
                        {"device", r.device},
                        {"precision", r.precision},
                        {"emulation_note", r.emulation_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.emulation_note)},
                        {"passed", r.passed},
                        {"failed", r.failed},
                        {"rows", rows}};
  return doc;
}

}  // namespace crosstrain::opcheck
