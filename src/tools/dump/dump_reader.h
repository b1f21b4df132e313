#pragma once
// Reads a dump directory's index (and its loss log) back into records, tolerating damage: a bad
// record line becomes a problem string and the rest is still read. What cannot be read at all
// (no directory, no index, a header from a newer format version) throws std::runtime_error with
// a message that names the path.
#include <string>
#include <vector>

#include "tools/dump/dump_format.h"
#include "tools/dump/loss_curve.h"

namespace crosstrain::dump {

struct DumpIndex {
  std::string dir;
  int version = 0;
  DumpMode mode = DumpMode::Stats;
  std::string producer;
  nlohmann::json meta = nlohmann::json::object();
  std::vector<DumpRecord> records;    // sorted by (step, seq)
  std::vector<std::string> problems;  // "index.jsonl line 7: ..."
  bool has_loss_log = false;
  LossLog loss;
};

DumpIndex read_dump(const std::string& dir);
// The index part of read_dump() on index.jsonl's text (no loss log); `where` names it in errors.
DumpIndex parse_dump_index(const std::string& text, const std::string& where);

// True when `path` is a directory holding index.jsonl.
bool is_dump_dir(const std::string& path);

}  // namespace crosstrain::dump
