#pragma once
// Migrates one Python source buffer: decode check, parse, plan, apply, re-parse.
//
// Promises: a buffer that is not UTF-8 (or looks binary) or does not parse is returned unchanged
// with its status; a rewrite whose result would not re-parse without errors is discarded (status
// RewriteFailed, nothing changed), so callers never write half-migrated code. Running it again on
// its own output changes nothing.
#include "tools/migrate/change.h"
#include "tools/migrate/rule_table.h"

#include <string>
#include <string_view>
#include <vector>

namespace crosstrain::migrate {

enum class FileStatus {
  Unchanged,      // parsed, nothing to rewrite (findings may still exist)
  Migrated,       // rewritten; `migrated` holds the new text
  SyntaxError,    // did not parse; left unchanged
  NotUtf8,        // binary or not UTF-8; skipped
  RewriteFailed,  // the rewrite did not re-parse; left unchanged
  ReadError,      // could not be read (set by the file walker)
  TooLarge,       // above the size limit (set by the file walker)
};
std::string_view file_status_name(FileStatus status);

struct FileMigration {
  std::string path;  // as given / relative, for reports
  FileStatus status = FileStatus::Unchanged;
  std::string detail;  // why it was skipped, e.g. "syntax error at line 12"
  std::vector<Change> changes;
  std::vector<Finding> findings;
  size_t lines_changed = 0;  // original lines touched + lines inserted
  std::string migrated;      // new text when status == Migrated
};

// True when `bytes` is valid UTF-8 without NUL bytes.
bool looks_like_utf8_text(std::string_view bytes);

FileMigration migrate_source(std::string path, std::string_view source, Target target);

}  // namespace crosstrain::migrate
