// libFuzzer target: a Python file as `crosstrain migrate` sees it once read (migrate_source), for
// every target, then the diff and reports the command prints. Checks file_migration.h's promises
// on any bytes: nothing throws, a migrated text parses, and migrating it again changes nothing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tools/migrate/file_migration.h"
#include "tools/migrate/migration_report.h"
#include "tools/migrate/migration_run.h"
#include "tools/migrate/python_syntax.h"

namespace mg = crosstrain::migrate;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  for (mg::Target target : {mg::Target::DeviceAgnostic, mg::Target::Npu, mg::Target::Cpu}) {
    mg::MigratedFile file;
    file.result = mg::migrate_source("fuzz.py", source, target);
    if (file.result.status == mg::FileStatus::Migrated) {
      if (mg::PythonSyntax(file.result.migrated).has_errors()) std::abort();  // would write code that fails
      if (mg::migrate_source("fuzz.py", file.result.bytes_to_write(), target).status == mg::FileStatus::Migrated)
        std::abort();  // a second run would change the output again
    }
    // The changes' offsets refer to the decoded text when a coding line declared another encoding.
    file.original = file.result.encoding.empty() ? std::string(source) : file.result.decoded;
    mg::MigrationSummary summary;
    summary.target = target;
    summary.mode = "check";
    summary.files.push_back(std::move(file));
    (void)mg::migration_diff(summary);
    (void)mg::change_list_csv(summary);
    (void)mg::unsupported_csv(summary);
    (void)mg::summary_json(summary).dump();
  }
  return 0;
}
