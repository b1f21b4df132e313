#pragma once
// Renderers for a MigrationSummary: the CSV files of `--report DIR`, the `--json` document, the
// terminal summary (statistics in the style of HIPIFY's: references converted / left, conversion
// percentage, by API family, lines changed) and the unified diff of `--diff`.
#include "tools/migrate/migration_run.h"

#include <nlohmann/json.hpp>
#include <string>

namespace crosstrain::migrate {

// change_list.csv: file, start_line, end_line, operation, rule, message
std::string change_list_csv(const MigrationSummary& summary);
// unsupported.csv: file, line, api, advice, rule
std::string unsupported_csv(const MigrationSummary& summary);
// Statistics and every change/finding; carries "schema_version".
nlohmann::json summary_json(const MigrationSummary& summary);
// Human-readable summary for the terminal.
std::string console_summary(const MigrationSummary& summary);
// Unified diff of every rewritten file (needs MigrateOptions::keep_text).
std::string migration_diff(const MigrationSummary& summary);

// Writes change_list.csv, unsupported.csv and summary.json into `dir` (created if needed).
void write_report_dir(const MigrationSummary& summary, const std::string& dir);

}  // namespace crosstrain::migrate
