// op-check --from-dump runs only operators that compute on tensors: every schema libtorch
// registers is judged, and each one that names a file or a path, or takes a storage or a stream, is
// refused before any argument is read.
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "tools/opcheck/replay_allowed.h"

using crosstrain::opcheck::replay_refusal;

namespace {

const c10::FunctionSchema& schema_of(const std::string& name, const std::string& overload = "") {
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle) throw std::runtime_error("no operator " + name + "." + overload);
  return handle->schema();
}

// A schema that names a file or a path: in its name, or as a string argument (einsum's `int[]? path`
// is a contraction order, not a path).
bool mentions_a_file(const c10::FunctionSchema& s) {
  if (s.name().find("file") != std::string::npos) return true;
  for (const auto& a : s.arguments()) {
    c10::TypePtr t = a.type();
    while (true) {
      if (auto o = t->castRaw<c10::OptionalType>()) t = o->getElementType();
      else if (auto l = t->castRaw<c10::ListType>()) t = l->getElementType();
      else break;
    }
    const std::string n = a.name();
    if (t->kind() == c10::TypeKind::StringType && (n.find("file") != std::string::npos || n.find("path") != std::string::npos))
      return true;
  }
  return false;
}

}  // namespace

TEST(ReplayAllowed, EveryRegisteredSchemaThatNamesAFileOrAPathIsRefused) {
  (void)torch::ones({1});  // every operator library is loaded
  int judged = 0, file_ops = 0, allowed = 0;
  for (const auto& op : c10::Dispatcher::singleton().getAllOpNames()) {
    auto handle = c10::Dispatcher::singleton().findSchema(op);
    if (!handle) continue;
    const auto& s = handle->schema();
    ++judged;
    const auto why = replay_refusal(s);
    if (!why) ++allowed;
    if (mentions_a_file(s)) {
      ++file_ops;
      ASSERT_TRUE(why.has_value()) << s;
      EXPECT_NE(why->find("touches files/process state"), std::string::npos) << *why;
    }
  }
  EXPECT_GT(judged, 2000);
  EXPECT_GE(file_ops, 1);      // aten::from_file at least
  EXPECT_GT(allowed, judged / 2);  // the rule keeps what computes
}

TEST(ReplayAllowed, OperatorsThatComputeAreReplayedOthersAreNot) {
  for (const auto& [name, overload] : std::vector<std::pair<std::string, std::string>>{
           {"aten::add", "Tensor"}, {"aten::gelu", ""}, {"aten::div", "Tensor_mode"}, {"aten::einsum", ""},
           {"aten::nll_loss_forward", ""}, {"aten::native_layer_norm", ""}, {"aten::scatter_reduce", "two"},
           {"aten::convolution", ""}, {"aten::_log_softmax", ""}, {"aten::embedding", ""}, {"aten::cat", ""},
           {"aten::randn", ""}, {"aten::to", "dtype"}, {"aten::index_put_", ""}, {"aten::_foreach_norm", "Scalar"}})
    EXPECT_FALSE(replay_refusal(schema_of(name, overload)).has_value()) << name << "." << overload << ": "
                                                                        << replay_refusal(schema_of(name, overload)).value_or("");
  const auto from_file = replay_refusal(schema_of("aten::from_file"));
  ASSERT_TRUE(from_file.has_value());
  EXPECT_NE(from_file->find("'filename'"), std::string::npos) << *from_file;
  EXPECT_TRUE(replay_refusal(schema_of("aten::set_", "source_Storage")).has_value());
  EXPECT_TRUE(replay_refusal(schema_of("aten::record_stream")).has_value());
  EXPECT_TRUE(replay_refusal(schema_of("aten::_cufft_clear_plan_cache")).has_value());
}
