#pragma once
// The noise a record carries, for compare's verdicts (docs/COMPARE.md, "The noise model").
//
// Two runs that compute the same thing in the same precision still differ by rounding: a
// different reduction order (thread count, kernel) changes the last bits of every sum. How much
// depends on the size of what went in, not on the size of what came out: a gradient that is zero
// in exact arithmetic comes out as rounding noise of its inputs' size (1e-14 from inputs of 1e-7
// relative spacing), and its two runs' values differ by 100% of themselves while agreeing to the
// last bit of their inputs. So every record is judged against a *noise scale*:
//
//   scale = max(own RMS, inputs' scale)
//   own RMS = norm / sqrt(finite elements), side A's statistics
//   inputs' scale = min over the operator's known float inputs of
//                   RMS_in * sqrt(max(1, numel_in / numel_out))
//                   (a reduction of n elements into one accumulates rounding of n terms: for a
//                   full sum that is the input's norm; the smallest input, since one operator's
//                   inputs can be of different kinds: a convolution's backward takes a gradient
//                   and an activation, and its bias gradient sums the gradient only)
//
// The inputs are the records named by op.inputs[].from (the agent's provenance), or, in tensors
// mode, the records whose files op.args names (an output used again unchanged is saved once, as
// the record's own file). A record without an operator (forward/, grad_output/, param_grad/) that
// holds the same tensor as an operator record before it in the step (same dtype, shape and
// statistics) takes that record's inputs' scale. Elsewhere the inputs are unknown and the scale is
// the record's own RMS.
#include <string>
#include <vector>

#include "tools/dump/dump_format.h"

namespace crosstrain::dump {
struct DumpIndex;  // dump_reader.h
}  // namespace crosstrain::dump

namespace crosstrain::compare {

using dump::DType;
using dump::DumpIndex;
using dump::TensorStats;


// norm / sqrt(finite count); 0 without a finite element.
double record_rms(const TensorStats& s);

// Spacing of floating-point numbers at 1 (2^-23 for float32, 2^-7 for bfloat16); 0 for integers.
double machine_epsilon(DType t);

// For every record of `index` (by position), its inputs' scale, 0 where the inputs are unknown.
std::vector<double> input_scales(const DumpIndex& index);

}  // namespace crosstrain::compare
