#pragma once
// The envelope every JSON document of a command carries, so a reader can tell what wrote it
// without knowing the command:
//
//   {"schema_version": 1, "kind": "analyze", "crosstrain_version": "0.1.0",
//    "argv": ["crosstrain", "analyze", "trace.json", "--json", "-"], ...the command's keys...}
//
// `kind` is the command's name as typed. main() records the command line once; library code and
// tests that never set it get an empty `argv`.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace crosstrain::report {

// The version of this build (the project version from CMake).
const char* crosstrain_version();

// Records the process's command line for later envelopes.
void set_command_line(int argc, const char* const* argv);
const std::vector<std::string>& command_line();

// `doc` (a JSON object) with the envelope's four keys set; they replace keys of the same name.
// std::invalid_argument when `doc` is not an object.
nlohmann::json with_envelope(const std::string& kind, nlohmann::json doc);

}  // namespace crosstrain::report
