#include "tools/migrate/file_migration.h"

#include "tools/migrate/python_syntax.h"
#include "tools/migrate/rewriter.h"

#include <set>

namespace crosstrain::migrate {

std::string_view file_status_name(FileStatus status) {
  switch (status) {
    case FileStatus::Unchanged: return "unchanged";
    case FileStatus::Migrated: return "migrated";
    case FileStatus::SyntaxError: return "syntax-error";
    case FileStatus::NotUtf8: return "not-utf8";
    case FileStatus::RewriteFailed: return "rewrite-failed";
    case FileStatus::ReadError: return "read-error";
    case FileStatus::TooLarge: return "too-large";
  }
  return "unchanged";
}

bool looks_like_utf8_text(std::string_view bytes) {
  size_t i = 0, n = bytes.size();
  while (i < n) {
    auto c = static_cast<unsigned char>(bytes[i]);
    if (c == 0) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t extra;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) extra = 1, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) extra = 2, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) extra = 3, cp = c & 0x07;
    else return false;
    if (i + extra >= n) return false;
    for (size_t k = 1; k <= extra; ++k) {
      auto cc = static_cast<unsigned char>(bytes[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      return false;
    i += extra + 1;
  }
  return true;
}

FileMigration migrate_source(std::string path, std::string_view source, Target target) {
  FileMigration result;
  result.path = std::move(path);
  if (!looks_like_utf8_text(source)) {
    result.status = FileStatus::NotUtf8;
    result.detail = "not UTF-8 text (binary or another encoding): skipped";
    return result;
  }
  PythonSyntax syntax(source);
  if (syntax.has_errors()) {
    result.status = FileStatus::SyntaxError;
    result.detail = "syntax error near line " + std::to_string(syntax.first_error_line()) + ": left unchanged";
    return result;
  }
  RewritePlan plan = plan_rewrite(syntax, target);
  result.findings = std::move(plan.findings);
  if (plan.changes.empty()) return result;

  std::string migrated = apply_plan(source, plan);
  // The check reparses incrementally: only the edited regions are parsed again.
  std::vector<TextEdit> edits;
  for (const SpanEdit* e : ordered_edits(plan)) edits.push_back({e->start, e->end, e->text});
  PythonSyntax check(migrated, syntax, edits);
  if (check.has_errors()) {
    result.status = FileStatus::RewriteFailed;
    result.detail = "rewritten code did not parse (line " + std::to_string(check.first_error_line()) +
                    "): left unchanged";
    return result;
  }
  std::set<size_t> touched;
  size_t inserted = 0;
  for (const auto& c : plan.changes) {
    if (c.inserted_line) {
      ++inserted;
      continue;
    }
    for (size_t line = c.start_line; line <= c.end_line; ++line) touched.insert(line);
  }
  result.lines_changed = touched.size() + inserted;
  result.changes = std::move(plan.changes);
  result.migrated = std::move(migrated);
  result.status = FileStatus::Migrated;
  return result;
}

}  // namespace crosstrain::migrate
