#include "report/envelope.h"

#include <stdexcept>

#include "report/output.h"

// src/report/CMakeLists.txt defines it; builds that compile report/ on their own (the fuzzer's)
// need no version.
#ifndef CROSSTRAIN_VERSION
#define CROSSTRAIN_VERSION "unknown"
#endif

namespace crosstrain::report {

namespace {
std::vector<std::string>& recorded_command_line() {
  static std::vector<std::string> argv;
  return argv;
}
}  // namespace

const char* crosstrain_version() { return CROSSTRAIN_VERSION; }

void set_command_line(int argc, const char* const* argv) {
  auto& out = recorded_command_line();
  out.assign(argv, argv + argc);
}

const std::vector<std::string>& command_line() { return recorded_command_line(); }

nlohmann::json with_envelope(const std::string& kind, nlohmann::json doc) {
  if (!doc.is_object()) throw std::invalid_argument("a JSON report must be an object, got " + std::string(doc.type_name()));
  doc["schema_version"] = kJsonSchemaVersion;
  doc["kind"] = kind;
  doc["crosstrain_version"] = crosstrain_version();
  doc["argv"] = command_line();
  return doc;
}

}  // namespace crosstrain::report
