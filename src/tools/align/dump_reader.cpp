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

DumpIndex read_dump(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(dir + ": not a directory");
  const fs::path index_path = fs::path(dir) / kIndexFile;
  if (!fs::exists(fs::symlink_status(index_path, ec)))
    throw std::runtime_error(dir + ": no " + std::string(kIndexFile) + " (not a crosstrain dump)");
  std::istringstream in(report::read_regular_file(index_path.string(), kMaxIndexBytes, "dump index"));
  DumpIndex idx;
  idx.dir = dir;
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error(index_path.string() + ": empty index");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(line);
  } catch (const std::exception& e) {
    throw std::runtime_error(index_path.string() + ": line 1 is not a JSON header: " + e.what());
  }
  if (!header.is_object() || header.value("format", std::string()) != kDumpFormatName)
    throw std::runtime_error(index_path.string() + ": line 1 does not say format \"" + kDumpFormatName + "\"");
  if (!header.contains("version") || !header["version"].is_number_integer())
    throw std::runtime_error(index_path.string() + ": header lacks an integer \"version\"");
  idx.version = header["version"].get<int>();
  if (idx.version > kDumpFormatVersion)
    throw std::runtime_error(index_path.string() + ": format version " + std::to_string(idx.version) +
                             " is newer than this crosstrain reads (" + std::to_string(kDumpFormatVersion) +
                             "); update crosstrain");
  try {
    idx.mode = parse_dump_mode(header.value("mode", std::string("stats")));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(index_path.string() + ": " + e.what());
  }
  idx.producer = header.value("producer", std::string());
  if (header.contains("meta") && header["meta"].is_object()) idx.meta = header["meta"];
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
  const fs::path loss_path = fs::path(dir) / kLossFile;
  if (fs::exists(fs::symlink_status(loss_path, ec))) {
    idx.has_loss_log = true;
    idx.loss = read_loss_log(loss_path.string());
  }
  return idx;
}

}  // namespace crosstrain::align
