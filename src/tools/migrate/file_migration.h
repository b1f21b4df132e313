#pragma once
// Migrates one Python source buffer: decode check, parse, plan, apply, re-parse.
//
// Promises: the source is read in the encoding its PEP 263 coding line declares (UTF-8 without
// one), and a migrated file is written back in it. A buffer that cannot be decoded, holds a NUL
// byte (Python refuses such a file) or does not parse is returned unchanged with its status, which
// fails --check; a rewrite whose result would not re-parse without errors is discarded (status
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
  NotUtf8,        // not text in its declared encoding (UTF-8 by default), or holds a NUL byte
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
  std::string migrated;      // new text when status == Migrated (UTF-8)
  std::string encoding;      // the declared encoding when it is not UTF-8 (PEP 263), else empty
  std::string decoded;       // with `encoding`: the source as UTF-8, which changes' offsets refer to
  std::string encoded;       // with `encoding`: `migrated` in that encoding, the bytes to write

  const std::string& bytes_to_write() const { return encoding.empty() ? migrated : encoded; }
};

// The encoding a PEP 263 coding line declares (`# -*- coding: latin-1 -*-` on line 1, or on line
// 2 below a comment or blank line), normalised as Python does ("latin-1" -> "iso-8859-1",
// "utf_8" -> "utf-8"); empty when there is none.
std::string declared_encoding(std::string_view bytes);

// True when `bytes` is valid UTF-8 without NUL bytes.
bool looks_like_utf8_text(std::string_view bytes);

FileMigration migrate_source(std::string path, std::string_view source, Target target);

}  // namespace crosstrain::migrate
