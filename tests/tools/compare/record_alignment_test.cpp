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
