#pragma once
// Which record of B is which record of A: a sequence alignment of the two runs' records, step by
// step, so that an operator inserted into (or removed from) one run is an insertion, not a shift
// of every later `#k` repetition onto an unrelated operator.
//
// Records are aligned on their name with the repetition counter taken out ("op_forward/h.0/aten.add#2[0]"
// aligns as "op_forward/h.0/aten.add[0]") and their shape: a longest common subsequence of the two
// streams (Myers' O((n+m)D) algorithm after the common prefix and suffix are set aside, and after
// the records whose key the other stream lacks, which pair with nothing, are set aside). A step
// whose streams differ by more than `max_edits` records is not aligned: its records are paired by
// exact name, as a reader of the names would, and the result says so. Records left unpaired by the
// alignment are then paired when they are one record emitted in another order in the two runs
// (autograd's order of gradient accumulations may differ between an fp32 and a bf16 run, and with
// it the `#k` counters): the same phase, name without `#k`, shape and kind of dtype, unique among
// the leftovers of both sides (`reordered` counts them; leftovers shape cannot tell apart are left
// alone). Those still unpaired are paired when their exact names are equal (the same record with a
// new shape: a shape mismatch), otherwise they are on one side only.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tools/dump/dump_format.h"

namespace crosstrain::compare {

using dump::DumpRecord;

// One entry of an alignment: indices into the two streams, one of them absent for a record on one
// side only. In execution order (A's order, B-only records where B has them).
struct AlignedPair {
  std::optional<size_t> a, b;
  bool reordered = false;  // paired out of order (see above)
};

struct StepAlignment {
  std::vector<AlignedPair> pairs;
  bool aligned = true;  // false: more than max_edits differences, paired by exact name
  size_t edits = 0;     // records on one side only after the alignment
  size_t reordered = 0; // pairs made out of order: one record emitted in another order in the two runs
};

inline constexpr size_t kMaxAlignmentEdits = 2048;

StepAlignment align_records(const std::vector<const DumpRecord*>& a, const std::vector<const DumpRecord*>& b,
                            size_t max_edits = kMaxAlignmentEdits);

// A record name without its repetition counters: "forward/layer1.0.relu#1" -> "forward/layer1.0.relu",
// "op_backward/fc/aten.mm#3[1]" -> "op_backward/fc/aten.mm[1]".
std::string name_without_repetition(const std::string& name);

}  // namespace crosstrain::compare
