#pragma once
// Reads profiler traces into a Trace: torch.profiler/Kineto (every category generation) and
// crosstrain JSON (an object with "traceEvents"), the older autograd profiler's export (a bare
// array, string pids, no categories), the Ascend PyTorch Profiler's trace_view.json (a bare array;
// kinds come from process names), plain or gzip-compressed; span kinds are then decided by
// span_classifier. One pass over the bytes (two threads on big files), no DOM: memory is the file
// plus ~56 bytes per span.
//
// Errors are std::runtime_error naming the file: report::JsonFormatError for bad content (with the byte
// offset), NotATraceError for well-formed JSON that is not a trace. Only regular files are read,
// and compressed input is bounded (ReadOptions::max_inflated_bytes). Nothing here aborts, blocks
// on a pipe or reads past the buffer, whatever the input.
#include <string>
#include <string_view>
#include <vector>

#include "tools/analyze/trace.h"
#include "tools/analyze/trace_parser.h"  // NotATraceError

namespace crosstrain::analyze {

struct ReadOptions {
  // Documents at least this big are parsed by two threads: the second starts at an event boundary
  // guessed in the middle and its result is used only if the first thread confirms the guess.
  size_t parallel_min_bytes = size_t{32} << 20;
  // A gzip file that inflates past this many bytes is refused (a gzip bomb would otherwise take
  // all memory). The gzip trailer's size field is not trusted: it is only a hint, capped by this
  // limit and by deflate's maximum ratio. `analyze --max-inflated-mib` raises it.
  uint64_t max_inflated_bytes = uint64_t{16} << 30;
};

// Parses a complete document already in memory. `data` needs no terminator (it is copied when
// needed); `name` is used in error messages.
Trace parse_trace(std::string_view data, const std::string& name, const ReadOptions& options = {});

// Reads a regular file (.json, or gzip by magic bytes, whatever the extension). FIFOs, devices
// and sockets are refused before anything is read from them, so /dev/zero or a pipe cannot hang.
Trace read_trace_file(const std::string& path, const ReadOptions& options = {});

// A trace file, or a folder: per-rank trace files (*.json, *.json.gz, *.pt.trace.json...), an
// Ascend PyTorch Profiler output folder (`*_ascend_pt`: its ASCEND_PROFILER_OUTPUT/trace_view.json),
// a folder of such folders (one per rank), `--profile DIR`'s cycle<k>/rank<r>.pt.trace.json (train,
// bench and run; the rank from the file name), or plain folders up to two levels down holding those
// (several runs side by side: level0/, level1/). Old train/bench traces, [rank<r>/]trace_cycle<k>.*,
// are read as the run layout's cycle<k>/rank<r> (rank 0 outside rank folders). Run by run (see
// run_folder_of); inside a run in rank order when its traces say their rank, else by path. JSON files in a folder that are not traces (an execution
// trace, profiler metadata) are skipped, each with a one-line note appended to `notes` when given;
// so are Ascend output folders holding only the database export (all of them: an error saying how
// to export text).
std::vector<Trace> read_traces(const std::string& path, const ReadOptions& options = {},
                               std::vector<std::string>* notes = nullptr);

// The run a trace read from a folder belongs to: the folder holding its rank folders (for
// <run>/<host>_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json and <run>/rank<N>/x.json, <run>),
// else the trace's own folder (DIR/cycle<k> for DIR/cycle<k>/rank<r>.pt.trace.json); an old-layout
// DIR/[rank<r>/]trace_cycle<k>.pt.trace.json belongs to DIR/cycle<k>, as it would today. Ranks are
// compared within one run.
std::string run_folder_of(const std::string& trace_path);

}  // namespace crosstrain::analyze
