#pragma once
// `crosstrain compare A B`: do two runs agree, and if not, where do they first part?
//
// A and B are dump directories (docs/DUMP_FORMAT.md) or loss logs. Records are matched by step and
// name, then must agree in shape; each matched pair is compared element-wise when both sides have
// tensor files, else by statistics. Side A is the reference (relative errors divide by A).
// The result is data only; compare_report.h renders it.
//
// A verdict is said only about inputs that could be read. Damage inside a readable input (a
// missing or corrupt .npy, a bad index or loss-log line, a shape mismatch, a record on one side
// only) is reported on that record or as a problem of the result, and makes the runs differ: what
// was not compared cannot be said to agree. An input that cannot be compared at all gives no
// result: a path that names nothing comparable (it does not exist, a folder without index.jsonl, a
// file without one loss line) is std::invalid_argument; one that exists but cannot be read (a
// FIFO, a device, a link loop, no permission, an index whose header is unreadable or from a newer
// format, a file over its size limit) is UnreadableInput.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/compare/tensor_metrics.h"
#include "tools/compare/verdict.h"
#include "tools/dump/dump_format.h"
#include "tools/dump/loss_curve.h"

namespace crosstrain::dump {
struct DumpIndex;  // dump_reader.h
}  // namespace crosstrain::dump

namespace crosstrain::compare {

using dump::DType;
using dump::DumpIndex;
using dump::DumpRecord;
using dump::LossComparison;
using dump::RecordKind;

enum class PairStatus { Compared, MissingInA, MissingInB, ShapeMismatch, Unreadable };
std::string pair_status_name(PairStatus s);  // "compared", "missing_in_a", ...

struct TensorComparison {
  int64_t step = 0;
  std::string name;                       // A's name (B's for a record only in B)
  std::string name_b;                     // B's name when the alignment paired records of two names
  bool reordered = false;                 // paired out of order: emitted in another order in the two runs
  RecordKind kind = RecordKind::Other;
  const DumpRecord* a = nullptr;          // into CompareResult's indices; null on the side it is missing
  const DumpRecord* b = nullptr;
  PairStatus status = PairStatus::Compared;
  std::string method;                     // "tensor" (element-wise) or "stats"
  DType effective_dtype = DType::Float32; // precision whose thresholds apply
  std::optional<TensorMetrics> metrics;   // method "tensor"
  std::optional<double> stat_rel_error;   // method "stats"
  // The noise model (noise_model.h): what the difference was measured against, and the limits.
  double noise_scale = 0;                 // max(own RMS, inputs' scale)
  bool scale_from_inputs = false;         // the inputs' scale was the larger
  std::optional<double> rel_error;        // difference relative to noise_scale (absent for cosine rules)
  Tolerance tolerance;                    // warn/error limits on rel_error
  Verdict verdict = Verdict::Pass;        // Error for every status other than Compared
  std::string reason;                     // why not pass, or what went wrong
  bool exact() const { return metrics ? metrics->exact() : false; }
};

struct CompareOptions {
  // Loss curves: tolerated relative difference per step; unset: by the runs' precision
  // (1e-2 for float32, 5e-2 for bfloat16/float16; see verdict.cpp).
  std::optional<double> loss_rtol;
  size_t context = 3;             // records shown before the first divergence
  int threads = 0;                // <= 0: hardware concurrency
  bool stats_only = false;        // compare by statistics even when tensor files exist
  bool allow_missing = false;     // records on one side only do not make the runs differ
  bool strict = false;            // warnings make the runs differ
  std::optional<DType> precision; // override the compute precision of both runs
};

struct CompareCounts {
  int64_t pass = 0, warn = 0, error = 0, exact = 0;
  int64_t missing_in_a = 0, missing_in_b = 0, shape_mismatch = 0, unreadable = 0;
  // Of the records on one side only, autocast's casts in a cross-precision comparison: expected
  // there, they do not make the runs differ.
  int64_t casts_one_side = 0;
  // Pairs made out of order: one record that the two runs emitted in another order (its `#k`
  // differs), paired by phase, name without `#k`, shape and kind of dtype (record_alignment.h).
  int64_t reordered = 0;
};


// Which rules judge the records: the noise rule when both runs compute in one precision on one
// kind of device, the table's (cross precision) otherwise, and why.
struct PrecisionRegime {
  bool same_precision = true;
  std::string why;  // what differs, when not the same
};

struct CompareResult {
  std::string path_a, path_b;
  std::shared_ptr<const DumpIndex> index_a, index_b;  // the records TensorComparison points into
  std::string input;                     // "dumps" or "loss_logs"
  std::vector<TensorComparison> tensors; // execution order: step, then A's order, B-only last
  CompareCounts counts;
  PrecisionRegime regime;
  int64_t records_with_input_scale = 0;  // compared records whose inputs' scale was known
  std::optional<size_t> first_divergence;  // first error (including unreadable/shape mismatch)
  std::optional<size_t> first_warning;
  size_t context = 3;
  std::optional<LossComparison> loss;
  std::vector<std::string> problems;     // dump-level: bad index or loss-log lines, ...
  std::vector<std::string> notes;        // what the reader should know that does not make runs differ
  int64_t bytes_compared = 0;            // tensor bytes read, both sides
  double seconds = 0;
  bool agree = false;
  // Neither a record pair nor a loss step could be compared (two empty dumps, or no record in
  // common under --allow-missing): no agreement, the runs count as differing (exit 1).
  bool nothing_compared = false;
  // "agree", "differ" or "nothing_compared".
  std::string verdict() const { return nothing_compared ? "nothing_compared" : agree ? "agree" : "differ"; }
  // Indices of the records shown with the first divergence: `context` before it, then itself.
  std::vector<size_t> divergence_window() const;
};

// An input of compare_paths that exists but cannot be read; what() names the side, the path and
// the reason: "cannot read B (/runs/b): /runs/b/index.jsonl: is a FIFO, not a regular file".
struct UnreadableInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The exit status of `compare` and `align` when they give no verdict because an input could not be
// read or a side could not run: neither "agree" (0) nor "differ" (1) is true of it.
inline constexpr int kNoVerdictExit = 3;

using CompareProgress = std::function<void(size_t done, size_t total)>;

// Compares two dump directories, two loss logs, or a dump's loss log with a loss log.
// Throws std::invalid_argument or UnreadableInput for an input that cannot be compared (above).
CompareResult compare_paths(const std::string& a, const std::string& b, const CompareOptions& options,
                            const CompareProgress& progress = nullptr);

}  // namespace crosstrain::compare
