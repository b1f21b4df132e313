#include "tools/dump/dump_format.h"

#include <gtest/gtest.h>

using namespace crosstrain::dump;

TEST(StepSelection, ParsesListsAndRanges) {
  auto sel = StepSelection::parse("0-2,10,20-21");
  EXPECT_FALSE(sel.all());
  for (int64_t s : {0, 1, 2, 10, 20, 21}) EXPECT_TRUE(sel.contains(s)) << s;
  for (int64_t s : {3, 9, 11, 19, 22}) EXPECT_FALSE(sel.contains(s)) << s;
  EXPECT_TRUE(StepSelection::parse("").all());
  EXPECT_TRUE(StepSelection::parse("").contains(12345));
}

TEST(StepSelection, RejectsBadSyntax) {
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "1,", "1 2", "1;2"})
    EXPECT_THROW(StepSelection::parse(bad), std::invalid_argument) << bad;
}

TEST(DumpFormat, NamesRoundTrip) {
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64, DType::Int32,
                  DType::UInt8, DType::Bool})
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_FALSE(parse_dtype("complex64").has_value());
  EXPECT_EQ(parse_precision("AMP_BF16"), DType::BFloat16);
  EXPECT_EQ(parse_precision("fp16"), DType::Float16);
  EXPECT_EQ(parse_precision("float32"), DType::Float32);
  EXPECT_FALSE(parse_precision("int8").has_value());
  EXPECT_EQ(record_name(RecordKind::Forward, "layer3.2.conv2"), "forward/layer3.2.conv2");
  EXPECT_EQ(record_name(RecordKind::ParamGradUnscaled, "fc.weight"), "param_grad_unscaled/fc.weight");
  EXPECT_EQ(record_name(RecordKind::Loss, "ignored"), "loss");
  EXPECT_EQ(parse_record_kind("grad_output"), RecordKind::GradOutput);
  EXPECT_EQ(parse_record_kind("something_new"), RecordKind::Other);
  EXPECT_LT(record_kind_phase(RecordKind::Forward), record_kind_phase(RecordKind::GradOutput));
}

TEST(DumpFormat, RecordJsonRoundTripAndValidation) {
  DumpRecord r;
  r.seq = 7;
  r.step = 3;
  r.name = "forward/layer1";
  r.kind = RecordKind::Forward;
  r.dtype = DType::BFloat16;
  r.stored_dtype = DType::Float32;
  r.shape = {2, 3};
  r.stats.max = 1.5;
  r.stats.nan_count = 2;
  r.file = "tensors/step3/000007-forward_layer1.npy";
  auto back = record_from_json(record_to_json(r));
  EXPECT_EQ(back.seq, 7);
  EXPECT_EQ(back.name, r.name);
  EXPECT_EQ(back.dtype, DType::BFloat16);
  EXPECT_EQ(back.stored_dtype, DType::Float32);
  EXPECT_EQ(back.shape, r.shape);
  EXPECT_EQ(back.stats.max, 1.5);
  EXPECT_FALSE(back.stats.min.has_value());
  EXPECT_EQ(back.stats.nan_count, 2);
  EXPECT_EQ(back.stats.numel, 6);
  EXPECT_EQ(back.file, r.file);

  auto j = record_to_json(r);
  j.erase("name");
  EXPECT_THROW(record_from_json(j), std::invalid_argument);
  j = record_to_json(r);
  j["dtype"] = "complex64";
  EXPECT_THROW(record_from_json(j), std::invalid_argument);
  j = record_to_json(r);
  j["shape"] = "2x3";
  EXPECT_THROW(record_from_json(j), std::invalid_argument);
  j = record_to_json(r);
  j["shape"] = {2, -1};
  EXPECT_THROW(record_from_json(j), std::invalid_argument);
  j = record_to_json(r);
  j["stats"]["max"] = "big";
  EXPECT_THROW(record_from_json(j), std::invalid_argument);
}
