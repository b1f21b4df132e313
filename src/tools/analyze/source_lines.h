#pragma once
// The script's lines behind the analysis (internal): for each operator row, each advisor concern,
// the host reads of tensor values and the loops of small Python calls. Runs only on traces with
// source lines (SourceIndex::available()).
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tools/analyze/analysis.h"
#include "tools/analyze/concern_spans.h"
#include "tools/analyze/source_index.h"
#include "tools/analyze/span_links.h"
#include "tools/analyze/step_timeline.h"

namespace crosstrain::analyze {

// Adds up work by the line of the script it is attributed to.
class LineTally {
 public:
  explicit LineTally(const SourceIndex& index) : index_(index) {}
  // `site` decides the line; `via`, when a different line, is where the work was issued from.
  void add(int32_t site, int32_t via, double us, int64_t count = 1, int64_t ops = 0, int64_t small_ops = 0,
           int64_t repeats = 0);
  // A span's work, by its user line (its source line when it has none).
  void add_span(size_t span, double us, int64_t count = 1);
  // Most time first (then most count); at most `max` lines; per_step = count / steps.
  std::vector<SourceLine> lines(double steps, size_t max) const;
  bool empty() const { return by_line_.empty(); }

 private:
  struct Entry {
    int32_t site = kNoSite;
    int64_t count = 0, ops = 0, small_ops = 0, repeats = 0;
    double us = 0;
    std::unordered_map<int64_t, std::pair<int32_t, double>> via;  // line key -> (site, time)
  };
  const SourceIndex& index_;
  std::unordered_map<int64_t, Entry> by_line_;
};

void compute_source_lines(const Trace& t, const SpanLinks& links, const std::vector<StepWindow>& windows,
                          const SourceIndex& index, const AnalyzeOptions& options, const ConcernSpans& concerns,
                          TraceAnalysis& out);

}  // namespace crosstrain::analyze
