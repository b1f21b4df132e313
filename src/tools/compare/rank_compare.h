#pragma once
// `compare` of two data-parallel runs: a folder of rank dumps (DIR/rank0, DIR/rank1, ... as
// `train --dump DIR` and `crosstrain run --dump DIR` write them for a torchrun job) against
// another, rank by rank. Each rank pair is a CompareResult of its own; the runs agree when every
// rank present on both sides agrees and both sides hold the same ranks.
#include <optional>
#include <string>
#include <vector>

#include "tools/compare/dump_compare.h"

namespace crosstrain::compare {

// The ranks of a folder of rank dumps, ascending: `dir` holds no index.jsonl of its own and one or
// more folders rank<N> that do. nullopt for anything else (a dump, a loss log, a plain folder).
std::optional<std::vector<int>> rank_dump_folders(const std::string& dir);

struct RankComparison {
  int rank = 0;
  CompareResult result;
};

struct RanksResult {
  std::string path_a, path_b;
  std::vector<RankComparison> ranks;      // the ranks on both sides, ascending
  std::vector<int> only_in_a, only_in_b;  // ranks on one side only: the runs differ
  double seconds = 0;
  bool agree = false;
  std::vector<int> differing() const;     // ranks whose runs do not agree
};

// Throws as compare_paths does for a rank dump that cannot be compared, naming the rank's folder.
RanksResult compare_rank_paths(const std::string& a, const std::string& b, const CompareOptions& options,
                               const CompareProgress& progress = nullptr);

}  // namespace crosstrain::compare
