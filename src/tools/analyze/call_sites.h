#pragma once
// What `crosstrain run --profile` writes next to each trace, <trace>.sources.json: where the
// script's Python calls were made from, and the DataLoaders the script built.
//
// A trace's python_function events name the function called and the line it is defined at; the
// line a call was made from is only in the profiler's event tree, which the agent walks when the
// process ends (python/crosstrain/_profile.py). Each call whose caller is a file of the user or of
// an installed library (not torch, not the standard library) is one CallSite, keyed by the call's
// start on the profiler's clock in ns: the trace's event for the same call starts at
// baseTimeNanoseconds + 1000 * ts. So a span of the trace finds its call site by its start.
//
// The file is a side file: a missing one means "no source lines", a malformed one is a note, and
// neither stops the trace from being analyzed.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace crosstrain::analyze {

struct SourceFile {
  std::string name;      // as the profiler writes it: relative to its sys.path entry ("train.py", "timm/layers/mlp.py")
  bool user = false;     // the user's own file (else an installed library's)
};

struct CallSite {
  int64_t start_ns = 0;  // the call's start on the profiler's clock
  uint32_t file = 0;     // index into CallSites::files
  int32_t line = 0;      // the line of the caller that made the call
};

// A torch.utils.data.DataLoader as the script built it; -1 where the agent could not read a field.
struct DataLoaderSettings {
  int64_t num_workers = -1;
  int pin_memory = -1;             // 0/1
  int persistent_workers = -1;     // 0/1
  int64_t prefetch_factor = -1;    // -1 also for None (no workers)
  int64_t batch_size = -1;
  std::string dataset;             // the dataset's class name ("ImageFolder")
  int64_t iterators = 0;           // times iterated (epochs started) by the end of the run
  std::string made_at;             // "train.py:31", "" when no user frame made it
  std::string made_text;           // that line's code
};

// The text of one line of a file, as the side file gives it (at most 200 bytes kept).
struct CodeLine {
  uint32_t file = 0;
  int32_t line = 0;
  std::string text;
};

struct CallSites {
  bool present = false;
  std::string path;                // the side file
  int cpus = 0;                    // CPUs the process could use
  std::vector<SourceFile> files;
  std::vector<CallSite> calls;     // sorted by start_ns
  std::vector<CodeLine> code;      // sorted by (file, line), one entry each
  std::vector<DataLoaderSettings> loaders;

  // The call that started at `start_ns`, or nullptr.
  const CallSite* at(int64_t start_ns) const;
  std::string label(const CallSite& c) const;  // "train.py:84"
  std::string text(const CallSite& c) const;   // "loss.item()", "" when unknown
};

// <trace stem>.sources.json for the trace at `trace_path` (stem: the path without ".json" or
// ".json.gz"). Absent: `present` stays false. Unreadable or malformed: one note, nothing kept.
CallSites read_call_sites(const std::string& trace_path, std::vector<std::string>* notes);

// Where that side file is for the trace at `trace_path`, whether or not it exists.
std::string call_sites_path_of(const std::string& trace_path);

// True for the side file's own name, which a folder listing must not take for a trace.
bool is_call_sites_file(const std::string& name);

}  // namespace crosstrain::analyze
