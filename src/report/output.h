#pragma once
// Where reports go. Every reporting command takes `--json PATH` ("-" means stdout) and some take
// `--csv`; these functions write those files atomically (temp file + rename) so a crash never
// leaves half a report, and fail with std::runtime_error naming the path.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace crosstrain::report {

// Version of every JSON document crosstrain writes; bump when a key changes meaning or goes away.
constexpr int kJsonSchemaVersion = 1;

// Writes `doc` (pretty-printed, 2 spaces) to `path`, or to stdout when path is "-".
void write_json(const nlohmann::json& doc, const std::string& path);

// Writes bytes to a file atomically: `path.tmp.<pid>` then rename over `path`.
void write_file_atomic(const std::string& path, const std::string& bytes);

// RFC 4180 CSV: fields with comma, quote or newline are quoted, quotes doubled.
std::string csv_field(const std::string& field);
std::string csv_document(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows);

// True when `--json -` sends JSON to stdout, so human-readable text must stay off stdout.
inline bool json_to_stdout(const std::string& json_path) { return json_path == "-"; }

}  // namespace crosstrain::report
