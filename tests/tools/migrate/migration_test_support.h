#pragma once
// What the migrate tests read off one file's migration: its findings as (rule id, line), whether
// --check would fail on it, and the text it leaves (the rewrite, or the input when unchanged).
#include <string>
#include <utility>
#include <vector>

#include "tools/migrate/file_migration.h"

namespace crosstrain::migrate::testing {

inline std::vector<std::pair<std::string, size_t>> flagged(const FileMigration& m) {
  std::vector<std::pair<std::string, size_t>> out;
  for (const auto& f : m.findings) out.emplace_back(f.rule->id, f.line);
  return out;
}

inline bool fails_check(const FileMigration& m) {
  for (const auto& f : m.findings)
    if (finding_fails_check(*f.rule)) return true;
  return false;
}

inline std::string output(const FileMigration& m, const std::string& input) {
  return m.status == FileStatus::Migrated ? m.migrated : input;
}

}  // namespace crosstrain::migrate::testing
