#pragma once
// What a migration does to one file, as data: the byte-span edits grouped into Changes (one per
// converted reference or inserted line) and the Findings left for a human. Produced by
// plan_rewrite() (rewriter.h), consumed by the file driver and the reports; no parser types here.
#include "tools/migrate/rule_table.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace crosstrain::migrate {

struct SpanEdit {
  uint32_t start = 0;  // byte offsets into the original source, [start, end)
  uint32_t end = 0;
  std::string text;    // replacement; empty span + text = insertion
};

struct Change {
  const Rule* rule = nullptr;
  std::vector<SpanEdit> edits;
  uint32_t start = 0, end = 0;        // extent of all edits
  size_t start_line = 0, end_line = 0;  // 1-based lines of the original source
  std::string before;                 // original text of the extent (for messages)
  std::string subject;                // the matched code, e.g. the whole `x.cuda(0)` call
  std::string message;                // what happened, for change_list.csv
  bool uses_device = false;           // reads the module-level `_accel_device`
  bool inserted_line = false;         // adds a whole new line (device definition, import)
};

struct Finding {
  const Rule* rule = nullptr;
  size_t line = 0;
  std::string api;     // the reference as written, e.g. "torch.backends.cudnn.benchmark"
  std::string advice;
  uint32_t start = 0, end = 0;  // byte extent of the flagged code in the original source
};

struct RewritePlan {
  std::vector<Change> changes;    // accepted, non-overlapping, sorted by start
  std::vector<Finding> findings;  // sorted by line
};

}  // namespace crosstrain::migrate
