#include "tools/migrate/migration_report.h"

#include "report/envelope.h"
#include "report/output.h"
#include "report/table.h"
#include "report/units.h"
#include "tools/migrate/rewriter.h"
#include "tools/migrate/unified_diff.h"

#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

namespace crosstrain::migrate {

namespace {

std::string operation_of(const Change& c) {
  if (c.inserted_line) return "insert";
  return "replace";
}

std::string percent(double fraction) { return report::format_percent(fraction, 1); }

}  // namespace

std::string change_list_csv(const MigrationSummary& summary) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& f : summary.files)
    for (const auto& c : f.result.changes)
      rows.push_back({f.result.path, std::to_string(c.start_line), std::to_string(c.end_line), operation_of(c),
                      std::string(c.rule->id), c.message});
  return report::csv_document({"file", "start_line", "end_line", "operation", "rule", "message"}, rows);
}

std::string unsupported_csv(const MigrationSummary& summary) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& f : summary.files)
    for (const auto& finding : f.result.findings)
      rows.push_back({f.result.path, std::to_string(finding.line), finding.api, finding.advice,
                      std::string(finding.rule->id)});
  return report::csv_document({"file", "line", "api", "advice", "rule"}, rows);
}

nlohmann::json summary_json(const MigrationSummary& s) {
  nlohmann::json families = nlohmann::json::object();
  for (const auto& [name, count] : s.families) {
    size_t total = count.converted + count.left;
    families[name] = {{"converted", count.converted},
                      {"left", count.left},
                      {"conversion_percent", total ? 100.0 * static_cast<double>(count.converted) / static_cast<double>(total) : 100.0}};
  }
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : s.files) {
    nlohmann::json changes = nlohmann::json::array();
    for (const auto& c : f.result.changes)
      changes.push_back({{"start_line", c.start_line}, {"end_line", c.end_line}, {"operation", operation_of(c)},
                         {"rule", c.rule->id}, {"message", c.message}});
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& x : f.result.findings)
      findings.push_back({{"line", x.line}, {"api", x.api}, {"advice", x.advice}, {"rule", x.rule->id}});
    nlohmann::json file = {{"path", f.result.path},
                           {"status", file_status_name(f.result.status)},
                           {"lines_changed", f.result.lines_changed},
                           {"changes", changes},
                           {"unsupported", findings}};
    if (!f.result.detail.empty()) file["detail"] = f.result.detail;
    if (!f.output_path.empty()) file["output"] = f.output_path;
    files.push_back(std::move(file));
  }
  nlohmann::json doc = {{"schema_version", report::kJsonSchemaVersion},
                        {"target", target_name(s.target)},
                        {"mode", s.mode},
                        {"totals",
                         {{"files_scanned", s.files_scanned},
                          {"files_migrated", s.files_migrated},
                          {"files_syntax_error", s.files_syntax_error},
                          {"files_rewrite_failed", s.files_rewrite_failed},
                          {"files_skipped", s.files_skipped},
                          {"files_copied", s.files_copied},
                          {"lines_scanned", s.lines_scanned},
                          {"references_converted", s.converted},
                          {"references_left", s.left},
                          {"references_left_harmless", s.left_harmless},
                          {"conversion_percent", 100.0 * s.conversion_fraction()},
                          {"lines_changed", s.lines_changed},
                          {"seconds", s.seconds}}},
                        {"families", families},
                        {"cuda_code_remains", s.cuda_code_remains()},
                        {"files", files}};
  if (!s.out_dir.empty()) doc["out_dir"] = s.out_dir;
  return doc;
}

namespace {

// Families whose findings name a library or kernel that exists only for CUDA.
bool cuda_only_library(std::string_view family) {
  return family == "apex" || family == "third-party-cuda" || family == "extension" || family == "cuda-graphs" ||
         family == "triton";
}

// Per file: the rewrites made (all proven, by rule), then each finding with its line and advice,
// CUDA-only libraries apart.
void per_file(std::ostream& out, const MigratedFile& f) {
  std::map<std::string, size_t> rewritten;
  for (const auto& c : f.result.changes)
    if (!c.inserted_line) ++rewritten[std::string(c.rule->id)];
  if (rewritten.empty() && f.result.findings.empty()) return;
  out << f.result.path << ":";
  if (!rewritten.empty()) {
    out << " rewritten";
    const char* sep = " ";
    for (const auto& [rule, n] : rewritten) {
      out << sep << rule << (n > 1 ? " x" + std::to_string(n) : "");
      sep = ", ";
    }
  }
  out << "\n";
  // A guarded call changes what the program prints off CUDA: each is named with its line.
  for (const auto& c : f.result.changes)
    if (c.rule->id == "diagnostic-guard") out << "  guarded, line " << c.start_line << " " << c.message << "\n";
  for (bool library : {false, true})
    for (const auto& finding : f.result.findings) {
      if (cuda_only_library(finding.rule->family) != library) continue;
      out << "  " << (library ? "needs a CUDA-only library" : finding_fails_check(*finding.rule) ? "flagged" : "note")
          << ", line " << finding.line << " " << finding.rule->id << " `" << finding.api << "`: " << finding.advice << "\n";
    }
}

}  // namespace

std::string console_summary(const MigrationSummary& s) {
  std::ostringstream out;
  for (const auto& f : s.files)
    if (!f.result.detail.empty() && f.result.status != FileStatus::Unchanged && f.result.status != FileStatus::Migrated)
      out << "skipped " << f.result.path << ": " << f.result.detail << "\n";
  for (const auto& f : s.files) per_file(out, f);

  report::Table table({"API family", "converted", "left", "converted %"});
  for (const auto& [name, count] : s.families) {
    size_t total = count.converted + count.left;
    table.add_row({name, std::to_string(count.converted), std::to_string(count.left),
                   percent(total ? static_cast<double>(count.converted) / static_cast<double>(total) : 1.0)});
  }
  table.add_separator();
  table.add_row({"total", std::to_string(s.converted), std::to_string(s.left), percent(s.conversion_fraction())});
  if (!s.families.empty()) out << table.render();

  out << "migrate --to " << target_name(s.target) << ": " << s.files_scanned << " files, "
      << report::format_count(static_cast<int64_t>(s.lines_scanned)) << " lines scanned; " << s.files_migrated
      << " files and " << s.lines_changed << " lines changed; " << s.converted << " references converted, " << s.left
      << " left (" << percent(s.conversion_fraction()) << " converted)";
  if (s.files_syntax_error) out << "; " << s.files_syntax_error << " with syntax errors left unchanged";
  if (s.files_rewrite_failed) out << "; " << s.files_rewrite_failed << " not rewritten (result did not parse)";
  if (s.files_skipped) out << "; " << s.files_skipped << " skipped (listed above)";
  out << "\n";
  if (s.mode == "copy") out << "migrated copy written to " << s.out_dir << "\n";
  else if (s.mode == "check")
    out << (s.cuda_code_remains() ? "check failed: CUDA-specific code remains\n" : "check passed: no CUDA-specific code found\n");
  if (s.left > 0) out << "references left for a human are listed with --report DIR (unsupported.csv)\n";
  return out.str();
}

std::string migration_diff(const MigrationSummary& summary) {
  std::string out;
  for (const auto& f : summary.files) {
    if (f.result.status != FileStatus::Migrated) continue;
    std::string label = f.result.path;
    while (!label.empty() && label.front() == '/') label.erase(0, 1);  // a/abs/path, as git shows it
    RewritePlan plan{f.result.changes, {}};  // the edits' texts live here until the diff is made
    std::vector<DiffEdit> edits;
    for (const SpanEdit* e : ordered_edits(plan)) edits.push_back({e->start, e->end, e->text});
    out += unified_diff_of_edits(f.original, f.result.migrated, edits, "a/" + label, "b/" + label);
  }
  return out;
}

void write_report_dir(const MigrationSummary& summary, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create report directory " + dir + ": " + ec.message());
  std::filesystem::path d(dir);
  report::write_file_atomic((d / "change_list.csv").string(), change_list_csv(summary));
  report::write_file_atomic((d / "unsupported.csv").string(), unsupported_csv(summary));
  report::write_json(report::with_envelope("migrate", summary_json(summary)), (d / "summary.json").string());
}

}  // namespace crosstrain::migrate
