#include "tools/dump/dump_reader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "report/input_file.h"
#include "report/json_scanner.h"
#include "tools/dump/record_parser.h"

namespace fs = std::filesystem;

namespace crosstrain::dump {

bool is_dump_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / kIndexFile, ec);
}

namespace {

// A scalar of the header's "meta" as a JSON value; arrays and objects are skipped (compare reads
// only strings there), so the header costs no tree however it is nested.
void read_meta(report::JsonScanner& js, DumpIndex& idx) {
  if (js.peek() != '{') return js.skip_value();
  js.expect('{', "opening \"meta\"");
  bool first = true;
  while (js.next_member(first, '}')) {
    const std::string key(js.read_string());
    js.expect(':', "after a key of \"meta\"");
    switch (js.peek()) {
      case '"': idx.meta[key] = std::string(js.read_string()); break;
      case 't': case 'f': idx.meta[key] = js.read_bool(); break;
      case 'n': js.read_null(), idx.meta[key] = nullptr; break;
      case '{': case '[': js.skip_value(); break;
      default: {
        const report::JsonNumber n = js.read_number();
        if (n.integral && n.value == static_cast<double>(n.whole)) idx.meta[key] = n.whole;
        else idx.meta[key] = n.value;
      }
    }
  }
}

// The format version as written: an integer, or nullopt for anything else (a fraction, 1e300, a string).
std::optional<int64_t> read_version(report::JsonScanner& js) {
  const char c = js.peek();
  if (c != '-' && (c < '0' || c > '9')) return js.skip_value(), std::nullopt;
  const report::JsonNumber n = js.read_number();
  if (!n.integral || std::fabs(n.value) >= 9e18) return std::nullopt;
  return n.whole;
}

std::string string_member(report::JsonScanner& js, const std::string& index_path, const char* key) {
  if (js.peek() != '"')
    throw std::runtime_error(index_path + ": header field \"" + key + "\" is not a string");
  return std::string(js.read_string());
}

// Line 1, {"format": "crosstrain-dump", "version": 1, "mode": ..., "producer": ..., "meta": {...}},
// read from the scanner's start up to `line_end`.
void read_header(report::JsonScanner& js, size_t line_end, const std::string& index_path, DumpIndex& idx) {
  if (js.peek() != '{')
    throw std::runtime_error(index_path + ": line 1 does not say format \"" + kDumpFormatName + "\"");
  js.expect('{', "opening the header");
  std::string format, mode = "stats";
  std::optional<int64_t> version;
  bool has_version = false, first = true;
  while (js.next_member(first, '}')) {
    const std::string key(js.read_string());
    js.expect(':', "after a header key");
    if (key == "format") format = js.peek() == '"' ? std::string(js.read_string()) : (js.skip_value(), "");
    else if (key == "version") version = read_version(js), has_version = true;
    else if (key == "mode") mode = string_member(js, index_path, "mode");
    else if (key == "producer") idx.producer = string_member(js, index_path, "producer");
    else if (key == "meta") read_meta(js, idx);
    else js.skip_value();
    if (js.offset() > line_end) break;
  }
  if (js.offset() > line_end) throw std::runtime_error(index_path + ": line 1 is not a JSON header: it runs past its line");
  if (format != kDumpFormatName)
    throw std::runtime_error(index_path + ": line 1 does not say format \"" + kDumpFormatName + "\"");
  if (!has_version || !version) throw std::runtime_error(index_path + ": header lacks an integer \"version\"");
  if (*version > kDumpFormatVersion)
    throw std::runtime_error(index_path + ": format version " + std::to_string(*version) +
                             " is newer than this crosstrain reads (" + std::to_string(kDumpFormatVersion) +
                             "); update crosstrain");
  if (*version < 1)
    throw std::runtime_error(index_path + ": format version " + std::to_string(*version) +
                             " is no version of the dump format (they start at 1; this crosstrain reads 1 to " +
                             std::to_string(kDumpFormatVersion) + "): a damaged header, or not written by a dump writer");
  idx.version = static_cast<int>(*version);
  try {
    idx.mode = parse_dump_mode(mode);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(index_path + ": " + e.what());
  }
}

}  // namespace

DumpIndex parse_dump_index(const std::string& text, const std::string& where) {
  const std::string& index_path = where;
  DumpIndex idx;
  if (text.empty()) throw std::runtime_error(index_path + ": empty index");
  // The header and the records: one scanner over the whole text (it needs the NUL that ends a
  // std::string), moved to each line's start. No line is copied or built into a tree.
  report::JsonScanner js(text.data(), text.size(), where);
  try {
    read_header(js, std::min(text.find('\n'), text.size()), index_path, idx);
  } catch (const report::JsonFormatError& e) {
    throw std::runtime_error(index_path + ": line 1 is not a JSON header: byte " + std::to_string(e.offset()) + ": " +
                             e.reason());
  }
  if (text.find_first_not_of(" \t\r", js.offset()) < text.find('\n'))
    throw std::runtime_error(index_path + ": line 1 is not a JSON header: text after the header object");
  // A bad record line is a problem of the dump and the next line is read anyway.
  // One record per line, but no more than a record line's least length allows: a file of empty
  // lines reserves nothing for them.
  idx.records.reserve(std::min(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), text.size() / 128));
  int64_t line_no = 1;
  size_t begin = text.find('\n');
  while (begin != std::string::npos && begin < text.size()) {
    ++begin;
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    if (text.find_first_not_of(" \t\r", begin) >= end) {
      begin = end;
      continue;
    }
    try {
      js.seek(begin);
      DumpRecord r = parse_record(js);
      if (js.offset() > end) throw std::invalid_argument("the record runs past the end of its line");
      if (text.find_first_not_of(" \t\r", js.offset()) < end) throw std::invalid_argument("text after the record");
      idx.records.push_back(std::move(r));
    } catch (const report::JsonFormatError& e) {
      const auto at = e.offset() >= begin && e.offset() <= end ? " column " + std::to_string(e.offset() - begin + 1) : "";
      idx.problems.push_back(std::string(kIndexFile) + " line " + std::to_string(line_no) + at + ": not JSON");
    } catch (const std::exception& e) {
      idx.problems.push_back(std::string(kIndexFile) + " line " + std::to_string(line_no) + ": " + e.what());
    }
    begin = end;
  }
  const auto by_step_then_seq = [](const DumpRecord& x, const DumpRecord& y) {
    return x.step != y.step ? x.step < y.step : x.seq < y.seq;
  };
  // Writers write in this order; sorting is for merged or edited indexes.
  if (!std::is_sorted(idx.records.begin(), idx.records.end(), by_step_then_seq))
    std::stable_sort(idx.records.begin(), idx.records.end(), by_step_then_seq);
  return idx;
}

DumpIndex read_dump(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(dir + ": not a directory");
  const fs::path index_path = fs::path(dir) / kIndexFile;
  if (!fs::exists(fs::symlink_status(index_path, ec)))
    throw std::runtime_error(dir + ": no " + std::string(kIndexFile) + " (not a crosstrain dump)");
  DumpIndex idx = parse_dump_index(report::read_regular_file(index_path.string(), kMaxIndexBytes, "dump index"),
                                   index_path.string());
  idx.dir = dir;
  const fs::path loss_path = fs::path(dir) / kLossFile;
  if (fs::exists(fs::symlink_status(loss_path, ec))) {
    idx.has_loss_log = true;
    idx.loss = read_loss_log(loss_path.string());
  }
  return idx;
}

}  // namespace crosstrain::dump
