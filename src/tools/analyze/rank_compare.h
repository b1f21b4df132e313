#pragma once
// Across the ranks of one data-parallel job: the straggler. In a synchronous job every rank waits
// in the gradient all-reduce for the slowest one, so a rank whose compute per step is clearly
// longer than the others' shows up twice: its own operators take longer, and the other ranks'
// communication time grows by the same amount (they wait). Per-rank findings then blame
// communication; this one names the rank to look at.
//
//   auto all = ...;                                     // one TraceAnalysis per rank
//   for (const auto& f : rank_findings(all)) ...        // rule "straggler", at most one
#include <string>
#include <vector>

#include "tools/analyze/analysis.h"

namespace crosstrain::analyze {

// Compute per step of one rank: device self time of operators (host self time on a trace without
// device activity), communication operators left out, divided by the steps.
double compute_us_per_step(const TraceAnalysis& a);

constexpr double kStragglerRatio = 1.10;  // compute per step against the median of the other ranks

// Findings about the job as a whole, from two or more ranked traces with steps; empty otherwise.
std::vector<Finding> rank_findings(const std::vector<TraceAnalysis>& ranks);

std::string render_rank_findings(const std::vector<Finding>& findings);

}  // namespace crosstrain::analyze
