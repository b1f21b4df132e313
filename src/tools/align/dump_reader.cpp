#include "tools/align/dump_reader.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "report/input_file.h"

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
  std::istringstream in(text);
  const std::string& index_path = where;
  DumpIndex idx;
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error(index_path + ": empty index");
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
  int64_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      idx.records.push_back(record_from_json(nlohmann::json::parse(line)));
    } catch (const std::exception& e) {
      idx.problems.push_back(std::string(kIndexFile) + " line " + std::to_string(line_no) + ": " + e.what());
    }
  }
  std::stable_sort(idx.records.begin(), idx.records.end(), [](const DumpRecord& x, const DumpRecord& y) {
    return x.step != y.step ? x.step < y.step : x.seq < y.seq;
  });
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
