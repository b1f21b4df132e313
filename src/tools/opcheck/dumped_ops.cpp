#include "tools/opcheck/dumped_ops.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "report/input_file.h"
#include "report/json_tree.h"
#include "tools/dump/dump_reader.h"

namespace crosstrain::opcheck {

namespace fs = std::filesystem;

std::pair<std::string, std::optional<int>> split_output_index(const std::string& name) {
  if (name.size() < 3 || name.back() != ']') return {name, std::nullopt};
  const size_t open = name.rfind('[');
  if (open == std::string::npos || open + 2 > name.size() - 1) return {name, std::nullopt};
  const std::string digits = name.substr(open + 1, name.size() - open - 2);
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
    return {name, std::nullopt};
  return {name.substr(0, open), std::stoi(digits)};
}

namespace {

struct Line {
  dump::DumpRecord record;
  std::optional<nlohmann::json> args;
};

bool is_op_kind(dump::RecordKind k) {
  return k == dump::RecordKind::OpForward || k == dump::RecordKind::OpBackward ||
         k == dump::RecordKind::OpOptimizer;
}

}  // namespace

DumpedOps parse_dumped_ops(const std::string& text, const std::string& dir) {
  const std::string where = (fs::path(dir) / dump::kIndexFile).string();
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  // The header alone through the dump reader: the same checks (format, version, mode) as compare.
  const dump::DumpIndex header = dump::parse_dump_index(line, where);
  DumpedOps d;
  d.dir = dir;
  d.mode = header.mode;
  d.producer = header.producer;
  std::vector<Line> lines;
  int64_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      // Validated and costed before it becomes a tree: no line can take the memory by nesting.
      const nlohmann::json j = report::parse_json_tree(line, where, report::tree_budget_for(line.size()));
      Line l{dump::record_from_json(j), std::nullopt};
      if (!is_op_kind(l.record.kind) || !l.record.op) {
        ++d.other_records;
        continue;
      }
      const nlohmann::json& op = j.at("op");
      if (auto it = op.find("args"); it != op.end()) l.args = *it;
      if (d.run_device.empty() && !l.record.device.empty() && l.record.device != "cpu") d.run_device = l.record.device;
      lines.push_back(std::move(l));
    } catch (const std::exception& e) {
      d.problems.push_back(std::string(dump::kIndexFile) + " line " + std::to_string(line_no) + ": " + e.what());
    }
  }
  if (d.run_device.empty()) d.run_device = "cpu";
  std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) {
    return a.record.step != b.record.step ? a.record.step < b.record.step : a.record.seq < b.record.seq;
  });
  d.records = static_cast<int64_t>(lines.size());
  for (auto& l : lines) {
    auto [base, index] = split_output_index(l.record.name);
    DumpedOutput out{l.record.seq, l.record.name, index, l.record.dtype, l.record.shape, l.record.file};
    // Outputs of one call follow each other and share the base name; an unindexed record is a call alone.
    const bool same_call = index && !d.ops.empty() && d.ops.back().step == l.record.step && d.ops.back().name == base &&
                           d.ops.back().outputs.back().index.has_value();
    if (same_call) {
      d.ops.back().outputs.push_back(std::move(out));
      continue;
    }
    DumpedOp op;
    op.step = l.record.step;
    op.seq = l.record.seq;
    op.name = base;
    op.origin = *l.record.op;
    op.args = std::move(l.args);
    op.outputs.push_back(std::move(out));
    d.ops.push_back(std::move(op));
  }
  return d;
}

DumpedOps read_dumped_ops(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(dir + ": not a directory");
  const fs::path index_path = fs::path(dir) / dump::kIndexFile;
  if (!fs::exists(fs::symlink_status(index_path, ec)))
    throw std::runtime_error(dir + ": no " + std::string(dump::kIndexFile) + " (not a crosstrain dump)");
  return parse_dumped_ops(report::read_regular_file(index_path.string(), dump::kMaxIndexBytes, "dump index"), dir);
}

}  // namespace crosstrain::opcheck
