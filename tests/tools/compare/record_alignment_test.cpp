// Records of two runs paired by a sequence alignment (record_alignment.h): an operator inserted in
// one run is on one side only, and the records after it pair with their counterparts under both
// names instead of shifting onto unrelated operators.
#include "tools/compare/record_alignment.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/compare/compare_report.h"
#include "tools/compare/dump_compare.h"
#include "tools/dump/op_dump.h"
#include "tools/dump/temp_dir.h"

using namespace crosstrain::dump;
using namespace crosstrain::compare;
using crosstrain::testing::OpDump;
using crosstrain::testing::pattern;
using crosstrain::testing::TempDir;

namespace {

// A transformer block's forward: the residual adds of block 0 share one name and count "#k";
// `inserted` adds one more `add` (on the MLP's hidden activations, 4x wider) between them.
void write_block(const std::string& dir, bool inserted) {
  OpDump d;
  d.op(0, "op_forward/h.0.ln/aten.native_layer_norm[0]", pattern(64, 1.0, 1));
  d.op(0, "op_forward/h.0/aten.add", pattern(64, 1.0, 2));
  d.op(0, "op_forward/h.0.fc/aten.addmm", pattern(256, 1.0, 3));
  d.op(0, "op_forward/h.0/aten.gelu", pattern(256, 0.5, 4));
  if (inserted) d.op(0, "op_forward/h.0/aten.add#1", pattern(256, 0.5, 4));
  d.op(0, "op_forward/h.0.out/aten.addmm", pattern(64, 1.0, 5));
  d.op(0, inserted ? "op_forward/h.0/aten.add#2" : "op_forward/h.0/aten.add#1", pattern(64, 1.0, 6));
  d.record(0, "forward/h.0", pattern(64, 1.0, 6));
  d.record(0, "loss", {2.0f});
  d.write(dir);
}

}  // namespace

TEST(RecordAlignment, RepetitionCountersAreNotPartOfTheKey) {
  EXPECT_EQ(name_without_repetition("forward/layer1.0.relu#1"), "forward/layer1.0.relu");
  EXPECT_EQ(name_without_repetition("op_backward/fc/aten.mm#3[1]"), "op_backward/fc/aten.mm[1]");
  EXPECT_EQ(name_without_repetition("forward/a#b/c#12x"), "forward/a#b/c#12x");
  EXPECT_EQ(name_without_repetition("loss"), "loss");
}

TEST(RecordAlignment, AnInsertedOperatorIsAnInsertionNotAShift) {
  TempDir a("align"), b("align");
  write_block(a.str(), false);
  write_block(b.str(), true);
  const auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_EQ(r.counts.shape_mismatch, 0);
  EXPECT_EQ(r.counts.missing_in_b, 0);
  EXPECT_EQ(r.counts.missing_in_a, 1);
  EXPECT_EQ(r.counts.pass, 8);
  EXPECT_FALSE(r.agree);  // a record on one side only
  ASSERT_EQ(r.tensors.size(), 9u);
  // In execution order: the inserted record sits where B ran it.
  EXPECT_EQ(r.tensors[4].status, PairStatus::MissingInA);
  EXPECT_EQ(r.tensors[4].name, "op_forward/h.0/aten.add#1");
  EXPECT_EQ(r.tensors[6].name, "op_forward/h.0/aten.add#1");
  EXPECT_EQ(r.tensors[6].name_b, "op_forward/h.0/aten.add#2");
  EXPECT_EQ(*r.tensors[6].stat_rel_error, 0.0);
  const std::string text = render_compare_console(r, {true, 40});
  EXPECT_NE(text.find("op_forward/h.0/aten.add#1 (B: op_forward/h.0/aten.add#2)"), std::string::npos) << text;
  EXPECT_EQ(compare_to_json(r)["tensors"][6]["name_b"], "op_forward/h.0/aten.add#2");
  CompareOptions lenient;
  lenient.allow_missing = true;
  EXPECT_TRUE(compare_paths(a.str(), b.str(), lenient).agree);
  EXPECT_TRUE(compare_paths(b.str(), a.str(), lenient).agree);
}

TEST(RecordAlignment, SameNameWithAnotherShapeIsStillAShapeMismatch) {
  DumpRecord x, y, z;
  x.name = "forward/fc";
  x.shape = {10, 100};
  y = x;
  y.shape = {100, 10};
  z.name = "loss";
  const auto al = align_records({&x, &z}, {&y, &z});
  ASSERT_EQ(al.pairs.size(), 2u);
  EXPECT_TRUE(al.pairs[0].a && al.pairs[0].b);
  EXPECT_EQ(al.edits, 0u);
}

TEST(RecordAlignment, StreamsTooDifferentArePairedByNameAndSaidSo) {
  std::vector<DumpRecord> ra(40), rb(40);
  std::vector<const DumpRecord*> a, b;
  for (size_t i = 0; i < 40; ++i) {
    ra[i].name = "op_forward/m/aten.op" + std::to_string(i);
    rb[i].name = "op_forward/m/aten.op" + std::to_string(39 - i);  // reversed: 39 x 2 edits
    a.push_back(&ra[i]);
    b.push_back(&rb[i]);
  }
  const auto al = align_records(a, b, 8);
  EXPECT_FALSE(al.aligned);
  EXPECT_EQ(al.edits, 0u);  // every name is on both sides
  const auto full = align_records(a, b);
  EXPECT_TRUE(full.aligned);
  EXPECT_EQ(full.edits, 0u);  // the LCS keeps one record; the equal names pair the rest
}

TEST(RecordAlignment, RecordsOfAKindTheOtherRunLacksCostTheAlignmentNothing) {
  // Autocast adds a cast before every linear layer: 3,000 records on one side only, more than the
  // alignment's budget of differences, yet every other record pairs in order.
  std::vector<DumpRecord> ra, rb;
  for (int layer = 0; layer < 1000; ++layer) {
    const std::string m = "op_forward/h." + std::to_string(layer);
    for (const char* op : {"/aten.addmm", "/aten.gelu"}) {
      DumpRecord r;
      r.name = m + op;
      ra.push_back(r);
    }
    for (int c = 0; c < 3; ++c) {
      DumpRecord r;
      r.name = m + "/aten._to_copy" + (c ? "#" + std::to_string(c) : "");
      rb.push_back(r);
    }
    rb.push_back(ra[ra.size() - 2]);
    rb.push_back(ra.back());
  }
  std::vector<const DumpRecord*> a, b;
  for (const auto& r : ra) a.push_back(&r);
  for (const auto& r : rb) b.push_back(&r);
  const auto al = align_records(a, b);
  EXPECT_TRUE(al.aligned);
  EXPECT_EQ(al.edits, 3000u);
  ASSERT_EQ(al.pairs.size(), 5000u);
  EXPECT_FALSE(al.pairs[0].a);          // the casts of h.0 come first, as B ran them
  EXPECT_EQ(*al.pairs[3].a, 0u);        // then h.0's addmm with its counterpart
  EXPECT_EQ(*al.pairs[3].b, 3u);
  EXPECT_EQ(*al.pairs[4999].a, 1999u);  // and the last gelu last
}

namespace {

// Gradient accumulation over a Linear(16, 8): autograd accumulates the bias's gradient ([8]) and
// the weight's ([8, 16], here 128 values) with aten.add_, in an order that may differ between an
// fp32 run and a bf16-autocast run, and the `#k` counters follow that order. The bf16 run also
// casts (aten._to_copy) where the fp32 run does not. `b_has_bias_add` false: B lacks that record.
void write_accumulation(const std::string& dir, bool bf16, bool b_has_bias_add = true) {
  using crosstrain::dump::DType;
  const DType low = bf16 ? DType::BFloat16 : DType::Float32;
  OpDump d;
  if (bf16) d.op(0, "op_forward/fc/aten._to_copy", pattern(128, 0.2, 1), {}, DType::BFloat16);
  d.op(0, "op_forward/fc/aten.addmm", pattern(32, 1.0, 2), {}, low);
  d.op(0, "op_backward/fc/aten.mm", pattern(128, 0.3, 3), {}, low);
  if (!bf16) {
    d.op(0, "op_backward/aten.add_", pattern(8, 0.1, 4));
    d.op(0, "op_backward/aten.add_#1", pattern(128, 0.5, 5));
  } else {
    d.op(0, "op_backward/aten.add_", pattern(128, 0.5, 5));
    d.op(0, "op_backward/aten._to_copy", pattern(8, 0.1, 4));
    if (b_has_bias_add) d.op(0, "op_backward/aten.add_#1", pattern(8, 0.1, 4));
  }
  d.record(0, "param_grad/fc.weight", pattern(128, 0.5, 5));
  d.record(0, "param_grad/fc.bias", pattern(8, 0.1, 4));
  d.record(0, "loss", {0.5f});
  d.write(dir);
}

}  // namespace

TEST(RecordAlignment, RecordsEmittedInAnotherOrderArePairedAndSaidSo) {
  TempDir a("align"), b("align");
  write_accumulation(a.str(), false);
  write_accumulation(b.str(), true);
  const auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_FALSE(r.regime.same_precision);
  EXPECT_EQ(r.counts.missing_in_b, 0);
  EXPECT_EQ(r.counts.missing_in_a, 2);  // the two casts, expected on the bf16 side only
  EXPECT_EQ(r.counts.casts_one_side, 2);
  EXPECT_EQ(r.counts.shape_mismatch, 0);
  EXPECT_EQ(r.counts.error, 0);
  EXPECT_EQ(r.counts.reordered, 1);
  EXPECT_TRUE(r.agree);
  // Each add_ with the one of its shape, whatever its #k.
  int adds = 0;
  for (const auto& t : r.tensors) {
    if (!t.a || !t.b || !t.a->op || t.a->op->op != "aten::add_") continue;
    ++adds;
    EXPECT_EQ(t.a->shape, t.b->shape) << t.name;
    EXPECT_EQ(*t.stat_rel_error < 0.01, true) << t.name;
  }
  EXPECT_EQ(adds, 2);
  const std::string text = render_compare_console(r, {false, 40});
  EXPECT_NE(text.find("paired out of order 1"), std::string::npos) << text;
  EXPECT_NE(text.find("1 record pair(s) paired out of order"), std::string::npos) << text;
  EXPECT_NE(text.find("verdict: runs AGREE"), std::string::npos) << text;
  const auto j = compare_to_json(r);
  EXPECT_EQ(j["counts"]["reordered"], 1);
  int flagged = 0;
  for (const auto& t : j["tensors"])
    if (t.contains("reordered")) ++flagged;
  EXPECT_EQ(flagged, 1);
  // Either side as the reference.
  const auto back = compare_paths(b.str(), a.str(), {});
  EXPECT_EQ(back.counts.reordered, 1);
  EXPECT_TRUE(back.agree);
}

TEST(RecordAlignment, ARecordMissingFromOneRunStaysMissing) {
  TempDir a("align"), b("align");
  write_accumulation(a.str(), false);
  write_accumulation(b.str(), true, /*b_has_bias_add=*/false);
  const auto r = compare_paths(a.str(), b.str(), {});
  EXPECT_EQ(r.counts.reordered, 0);
  EXPECT_EQ(r.counts.missing_in_b, 1);
  EXPECT_FALSE(r.agree);
  bool bias_missing = false;
  for (const auto& t : r.tensors)
    if (t.name == "op_backward/aten.add_" && t.status == PairStatus::MissingInB) bias_missing = t.a->shape == std::vector<int64_t>{8};
  EXPECT_TRUE(bias_missing);
}

TEST(RecordAlignment, LeftoversThatShapeCannotTellApartAreNotGuessed) {
  auto rec = [](const std::string& name, std::vector<int64_t> shape, DType dtype = DType::Float32) {
    DumpRecord r;
    r.name = name;
    r.kind = RecordKind::OpBackward;
    r.shape = std::move(shape);
    r.dtype = dtype;
    return r;
  };
  // Two [8] adds on each side, crossing three muls: which is which, shape cannot say.
  std::vector<DumpRecord> ra = {rec("op_backward/aten.add_", {8}), rec("op_backward/aten.add_#1", {8}),
                                rec("op_backward/aten.mul", {4}), rec("op_backward/aten.mul#1", {4}),
                                rec("op_backward/aten.mul#2", {4})};
  std::vector<DumpRecord> rb = {rec("op_backward/aten.mul", {4}), rec("op_backward/aten.mul#1", {4}),
                                rec("op_backward/aten.mul#2", {4}), rec("op_backward/aten.add_#2", {8}),
                                rec("op_backward/aten.add_#3", {8})};
  std::vector<const DumpRecord*> a, b;
  for (const auto& r : ra) a.push_back(&r);
  for (const auto& r : rb) b.push_back(&r);
  auto al = align_records(a, b);
  EXPECT_EQ(al.reordered, 0u);
  EXPECT_EQ(al.edits, 4u);
  // One of each: paired, although it crosses the muls.
  b.pop_back();
  a.erase(a.begin() + 1);
  al = align_records(a, b);
  EXPECT_EQ(al.reordered, 1u);
  EXPECT_EQ(al.edits, 0u);
  // An integer record does not pair with a floating one of the same name and shape.
  DumpRecord idx = rec("op_backward/aten.add_#2", {8}, DType::Int64);
  b.back() = &idx;
  al = align_records(a, b);
  EXPECT_EQ(al.reordered, 0u);
  EXPECT_EQ(al.edits, 2u);
  // Another phase neither.
  DumpRecord fwd = rec("op_forward/aten.add_#2", {8});
  fwd.kind = RecordKind::OpForward;
  b.back() = &fwd;
  EXPECT_EQ(align_records(a, b).reordered, 0u);
}
