#include "tools/align/dump_reader.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "report/input_file.h"
#include "report/json_scanner.h"
#include "tools/align/record_parser.h"

namespace fs = std::filesystem;

namespace crosstrain::align {

bool is_dump_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / kIndexFile, ec);
}

namespace {

void read_header(const nlohmann::json& header, const std::string& index_path, DumpIndex& idx) {
  if (!header.is_object() || header.value("format", std::string()) != kDumpFormatName)
    throw std::runtime_error(index_path + ": line 1 does not say format \"" + kDumpFormatName + "\"");
  if (!header.contains("version") || !header["version"].is_number_integer())
    throw std::runtime_error(index_path + ": header lacks an integer \"version\"");
  const int64_t version = json_int64(header["version"], "version");
  if (version > kDumpFormatVersion || version < 0)
    throw std::runtime_error(index_path + ": format version " + std::to_string(version) +
                             " is newer than this crosstrain reads (" + std::to_string(kDumpFormatVersion) +
                             "); update crosstrain");
  idx.version = static_cast<int>(version);
  idx.mode = parse_dump_mode(header.value("mode", std::string("stats")));
  idx.producer = header.value("producer", std::string());
  if (header.contains("meta") && header["meta"].is_object()) idx.meta = header["meta"];
}

}  // namespace

DumpIndex parse_dump_index(const std::string& text, const std::string& where) {
  const std::string& index_path = where;
  DumpIndex idx;
  if (text.empty()) throw std::runtime_error(index_path + ": empty index");
  const std::string line = text.substr(0, text.find('\n'));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(line);
  } catch (const std::exception& e) {
    throw std::runtime_error(index_path + ": line 1 is not a JSON header: " + e.what());
  }
  try {
    read_header(header, index_path, idx);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(index_path + ": header field of the wrong type: " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(index_path + ": " + e.what());
  }
  // The records: one scanner over the whole text (it needs the NUL that ends a std::string), moved
  // to each line's start; a bad line is a problem of the dump and the next line is read anyway.
  report::JsonScanner js(text.data(), text.size(), where);
  idx.records.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')));
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

}  // namespace crosstrain::align
