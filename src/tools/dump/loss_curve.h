#pragma once
// Loss curves: reading a loss log and comparing two of them step by step.
//
// A loss log is JSON lines {"step": N, "loss": X} (loss.jsonl of a dump; X may be "nan"/"inf");
// plain text lines "N X" or "N,X" are read too, so a log grepped out of any training script
// works. Blank lines, '#' comments and a non-numeric first line (a CSV header) are skipped.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace crosstrain::dump {

struct LossPoint {
  int64_t step = 0;
  double loss = 0.0;
};

struct LossLog {
  std::vector<LossPoint> points;      // sorted by step; a repeated step keeps its last value
  std::vector<std::string> problems;  // unreadable lines
};

// std::runtime_error when the file cannot be opened, is not a regular file or is larger than
// kMaxLossLogBytes (dump_format.h).
LossLog read_loss_log(const std::string& path);
// The same from text already read; `path` only names it in problems.
LossLog parse_loss_log(const std::string& text, const std::string& path);

struct LossStepDiff {
  int64_t step = 0;
  double a = 0, b = 0;
  double rel_diff = 0;  // |a - b| / |a|; 0 when both are NaN; +inf when only one is finite
};

struct LossComparison {
  double rtol = 0;
  std::vector<LossStepDiff> steps;   // steps present on both sides
  int64_t only_in_a = 0, only_in_b = 0;
  std::optional<int64_t> first_step_beyond;  // first step whose rel_diff > rtol
  int64_t steps_beyond = 0;
  double max_rel_diff = 0;
  int64_t max_rel_step = 0;
  double mean_rel_diff = 0;          // over steps with finite rel_diff
  bool within_tolerance() const { return !first_step_beyond.has_value(); }
};

LossComparison compare_losses(const LossLog& a, const LossLog& b, double rtol);

}  // namespace crosstrain::dump
