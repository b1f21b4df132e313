#include "tools/migrate/file_migration.h"

#include "tools/migrate/line_endings.h"
#include "tools/migrate/python_syntax.h"
#include "tools/migrate/rewriter.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <iconv.h>
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

namespace {

std::string lower_dashed(std::string_view name) {
  std::string out(name);
  for (char& c : out) c = c == '_' ? '-' : static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// Converts `in` between two encodings with iconv; false when a byte sequence is invalid, the
// encoding unknown, or a character has no form in the target encoding.
bool transcode(std::string_view in, const std::string& from, const std::string& to, std::string& out,
               std::string& error) {
  iconv_t cd = iconv_open(to.c_str(), from.c_str());
  if (cd == reinterpret_cast<iconv_t>(-1)) {
    error = "unknown encoding '" + (from == "UTF-8" ? to : from) + "'";
    return false;
  }
  out.assign(in.size() * 2 + 16, '\0');
  char* src = const_cast<char*>(in.data());
  size_t src_left = in.size(), done = 0;
  for (;;) {
    char* dst = out.data() + done;
    size_t dst_left = out.size() - done;
    size_t rc = iconv(cd, src_left ? &src : nullptr, &src_left, &dst, &dst_left);
    done = out.size() - dst_left;
    if (rc != static_cast<size_t>(-1) && src_left == 0) break;
    if (rc == static_cast<size_t>(-1) && errno == E2BIG) {
      out.resize(out.size() * 2);
      continue;
    }
    error = "byte " + std::to_string(in.size() - src_left) + " is not valid " + from;
    iconv_close(cd);
    return false;
  }
  iconv_close(cd);
  out.resize(done);
  return true;
}

size_t line_at(std::string_view text, size_t offset) {
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

}  // namespace

std::string declared_encoding(std::string_view bytes) {
  size_t pos = 0;
  for (int line = 0; line < 2 && pos <= bytes.size(); ++line) {
    size_t end = bytes.find_first_of("\r\n", pos);
    std::string_view text = bytes.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    size_t first = text.find_first_not_of(" \t\f\r");
    bool comment = first != std::string_view::npos && text[first] == '#';
    if (comment) {
      size_t at = text.find("coding", first);
      if (at != std::string_view::npos && at + 6 < text.size() && (text[at + 6] == ':' || text[at + 6] == '=')) {
        size_t k = at + 7;
        while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
        size_t begin = k;
        while (k < text.size() && (std::isalnum(static_cast<unsigned char>(text[k])) || text[k] == '-' || text[k] == '_' ||
                                   text[k] == '.'))
          ++k;
        if (k > begin) {
          std::string name = lower_dashed(text.substr(begin, k - begin));
          if (name == "utf-8" || name.rfind("utf-8-", 0) == 0 || name == "utf8") return "utf-8";
          for (const char* latin : {"latin-1", "iso-8859-1", "iso-latin-1"})
            if (name == latin || name.rfind(std::string(latin) + "-", 0) == 0) return "iso-8859-1";
          return name;
        }
      }
    }
    // The second line counts only below a comment or a blank line.
    if (!comment && first != std::string_view::npos) break;
    if (end == std::string_view::npos) break;
    pos = end + (bytes.compare(end, 2, "\r\n") == 0 ? 2 : 1);
  }
  return {};
}

FileMigration migrate_source(std::string path, std::string_view source, Target target) {
  FileMigration result;
  result.path = std::move(path);
  const std::string encoding = declared_encoding(source);
  if (!encoding.empty() && encoding != "utf-8") {
    std::string error;
    if (!transcode(source, encoding, "UTF-8", result.decoded, error)) {
      result.status = FileStatus::NotUtf8;
      result.detail = "not readable as the " + encoding + " its coding line declares (" + error + "): cannot be checked";
      return result;
    }
    result.encoding = encoding;
    source = result.decoded;
  }
  const size_t nul = source.find('\0');
  if (nul != std::string_view::npos) {
    result.status = FileStatus::NotUtf8;
    result.detail = "holds a NUL byte on line " + std::to_string(line_at(source, nul)) +
                    " (Python refuses such a file): cannot be checked";
    return result;
  }
  if (!looks_like_utf8_text(source)) {
    result.status = FileStatus::NotUtf8;
    result.detail = "not UTF-8 text, and no coding line declares another encoding (PEP 263): cannot be checked";
    return result;
  }
  // Lone CRs end lines for Python but not for the grammar: parse a copy where they are "\n".
  const LineEndings endings = line_endings_of(source);
  const std::string_view original = source;
  std::string lf_text;
  if (endings.lone_cr) {
    lf_text = with_lone_cr_as_lf(source);
    source = lf_text;
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
  if (endings.lone_cr) {
    restyle_line_breaks(plan, endings.newline);
    migrated = apply_plan(original, plan);
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
  if (!result.encoding.empty()) {
    std::string error;
    if (!transcode(migrated, "UTF-8", result.encoding, result.encoded, error)) {
      result.status = FileStatus::RewriteFailed;
      result.detail = "the rewritten code cannot be written back as " + result.encoding + " (" + error + "): left unchanged";
      result.changes.clear();
      return result;
    }
  }
  result.migrated = std::move(migrated);
  result.status = FileStatus::Migrated;
  return result;
}

}  // namespace crosstrain::migrate
