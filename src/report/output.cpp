#include "report/output.h"

#include <stdexcept>

namespace crosstrain::report {

void write_json(const nlohmann::json& doc, const std::string& path) {
  // Invalid UTF-8 in names coming from traces or files must not abort the report.
  const std::string text = doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (path == "-") {
    write_stdout(text);
    return;
  }
  write_file_atomic(path, text);
}

std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string csv_document(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows) {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out += csv_field(cells[i]);
    }
    out += '\n';
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

}  // namespace crosstrain::report
