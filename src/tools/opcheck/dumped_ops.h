#pragma once
// The operator calls of an operator-level dump (`crosstrain run --dump-level op`), read back for
// replay: one DumpedOp per aten operator call, with its recorded arguments and its output records.
// Torch-free: the arguments stay JSON here and become IValues in replay_args.
//
//   DumpedOps d = read_dumped_ops("dump");   // std::runtime_error when the index cannot be read
//   for (const DumpedOp& op : d.ops) ...      // in execution order
//
// A multi-output operator has one record per output, named NAME[0], NAME[1], ... and sharing one
// "op" object; they become one DumpedOp whose outputs carry those indices. A record that cannot be
// read becomes a line in `problems`, and the rest is still read.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tools/dump/dump_format.h"

namespace crosstrain::opcheck {

struct DumpedOutput {
  int64_t seq = 0;
  std::string name;           // the record's name, with its [i]
  std::optional<int> index;   // position among the operator's returns; none when the record has no [i]
  dump::DType dtype = dump::DType::Float32;
  std::vector<int64_t> shape;
  std::string file;           // tensors mode: the output's .npy, relative to the dump; else empty
};

struct DumpedOp {
  int64_t step = 0;
  int64_t seq = 0;                      // the first output record's seq
  std::string name;                     // record name without the output index
  dump::OpOrigin origin;               // schema name, overload, phase, module, source, random
  std::optional<nlohmann::json> args;   // "op"."args" as recorded; none in a stats-mode dump
  std::vector<DumpedOutput> outputs;
};

struct DumpedOps {
  std::string dir;
  dump::DumpMode mode = dump::DumpMode::Stats;
  std::string producer;
  std::string run_device;               // the first accelerator a record names ("cuda:0"), else "cpu"
  std::vector<DumpedOp> ops;            // in execution order
  int64_t records = 0;                  // operator records read
  int64_t other_records = 0;            // module-level records (forward/..., loss, ...)
  std::vector<std::string> problems;    // "index.jsonl line 7: ..."
};

// Reads DIR/index.jsonl (header checks as dump::read_dump). std::runtime_error when there is no
// readable index.
DumpedOps read_dumped_ops(const std::string& dir);
// The same on index.jsonl's text; `dir` is kept for resolving tensor files.
DumpedOps parse_dumped_ops(const std::string& text, const std::string& dir);

// "NAME[3]" -> ("NAME", 3); a name without a trailing [digits] -> (name, nullopt).
std::pair<std::string, std::optional<int>> split_output_index(const std::string& name);

}  // namespace crosstrain::opcheck
