#pragma once
// `crosstrain op-check --from-dump DIR`: every aten operator an operator-level tensors dump
// recorded (`crosstrain run --dump-level op --dump-mode tensors`), replayed from its recorded
// inputs through libtorch's dispatcher by schema name, on the target device and dtype, against the
// same call in float64 on the CPU. No Python, no per-operator list: any aten schema is replayed.
//
//   OpCheckOptions o; o.from_dump = "dump"; o.device = "cuda";
//   ReplayResult r = run_replay(o);       // r.failed == 0 when every replayed call passes
//
// One replay per operator call (a multi-output operator's records are its outputs). The target
// takes each tensor's dtype in the run, or --precision's for every floating tensor and dtype
// argument; the reference takes the target's (rounded) inputs widened to float64. Metrics and
// tolerances are op-check's (measure_error, op_check_tolerance, by the dtype of each output on the
// target). A call that cannot be replayed is listed with the reason and counts as neither pass nor
// fail: a seeded random operator whose output depends on the generator (probed by two float64
// runs under different seeds, so dropout_p=0 attention is replayed), an argument the dump could not
// record, missing inputs (a stats-mode dump), an operator this libtorch lacks, a reference that
// throws, or a replay that does not reproduce the recorded output's shape. A call that throws on
// the target fails with the message. Each .npy is read once and freed after its last use.
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tools/opcheck/op_check_options.h"

namespace crosstrain::opcheck {

struct ReplayOutput {
  int index = 0;             // position among the operator's returns
  std::string dtype;         // on the target
  std::vector<int64_t> shape;
  double max_abs = 0, max_rel = 0, cosine = 1;
  double tolerance = 0;      // on max_rel, by the target dtype
  double scale = 0;          // a reduction's: what max_rel divides max_abs by (its inputs' magnitude when larger); 0: the output's
  bool pass = false;
  std::optional<double> run_max_rel;  // the run's own recorded output against the reference
};

enum class ReplayStatus { Pass, Fail, NotReplayed };

struct ReplayRow {
  int64_t step = 0, seq = 0;
  std::string record;        // record name without the output index
  std::string op;            // "aten::add.Tensor", "aten::gelu"
  std::string phase, module, source;
  ReplayStatus status = ReplayStatus::NotReplayed;
  std::string reason;        // NotReplayed: why; Fail: the target's error, if it threw
  std::vector<ReplayOutput> outputs;
  // The worst output by max_rel / tolerance (what the row is ranked by).
  const ReplayOutput* worst() const;
};

struct ReplayResult {
  std::string dump, device, precision;  // precision: "as recorded" or the --precision asked
  std::string run_device;
  std::vector<ReplayRow> rows;          // execution order
  std::vector<std::string> problems;    // index lines that could not be read
  int64_t calls = 0, replayed = 0, passed = 0, failed = 0, not_replayed = 0;
  int64_t files_loaded = 0;
  double seconds = 0;                   // reading inputs, both runs and the comparison (wall time)
  double cpu_seconds = 0;               // the same in CPU time of the process (steadier on a busy host)
  double calls_per_second() const { return seconds > 0 ? static_cast<double>(replayed) / seconds : 0; }
  bool all_pass() const { return failed == 0 && passed > 0; }
};

// std::invalid_argument for a filter that matches no call, a dump without operator records or
// --perf; std::runtime_error when the dump cannot be read.
ReplayResult run_replay(const OpCheckOptions& options, std::ostream* messages = nullptr);  // messages: the emulation note

// Sorting key of a row: replayed rows by max_rel / tolerance of their worst output, highest first.
double replay_rank(const ReplayRow& row);

// Renderers (replay_report.cpp). The console shows the `top` worst replayed calls (0: all) and the
// calls not replayed grouped by operator and reason; the JSON has every row.
std::string render_replay_console(const ReplayResult& r, int64_t top);
nlohmann::json replay_to_json(const ReplayResult& r);

}  // namespace crosstrain::opcheck
