#pragma once
// Reads profiler traces into a Trace: torch.profiler/Kineto and crosstrain JSON (an object with
// "traceEvents"), the older autograd profiler's export (a bare array, string pids, no categories),
// the Ascend PyTorch Profiler's trace_view.json (a bare array; kinds come from process names), plain
// or gzip-compressed. One pass over the bytes (two threads on big files), no DOM: memory is the
// file plus ~56 bytes per span.
//
// Errors are std::runtime_error (TraceFormatError for bad content) naming the file and, for
// content, the byte offset. Nothing here aborts or reads past the buffer, whatever the input.
#include <string>
#include <string_view>
#include <vector>

#include "tools/analyze/trace.h"

namespace crosstrain::analyze {

struct ReadOptions {
  // Documents at least this big are parsed by two threads: the second starts at an event boundary
  // guessed in the middle and its result is used only if the first thread confirms the guess.
  size_t parallel_min_bytes = size_t{32} << 20;
};

// Parses a complete document already in memory. `data` needs no terminator (it is copied when
// needed); `name` is used in error messages.
Trace parse_trace(std::string_view data, const std::string& name, const ReadOptions& options = {});

// Reads a file (.json, or gzip by magic bytes, whatever the extension).
Trace read_trace_file(const std::string& path, const ReadOptions& options = {});

// A trace file, or a folder of per-rank trace files (*.json, *.json.gz, *.pt.trace.json...), in
// rank order when the traces say their rank, else by file name.
std::vector<Trace> read_traces(const std::string& path);

}  // namespace crosstrain::analyze
