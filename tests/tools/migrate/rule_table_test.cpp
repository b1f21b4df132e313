#include "tools/migrate/rule_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

using namespace crosstrain::migrate;

TEST(RuleTable, IdsAreUniqueAndEveryRuleSaysSomething) {
  std::set<std::string_view> ids;
  for (const auto& rule : rule_table()) {
    EXPECT_TRUE(ids.insert(rule.id).second) << "duplicate " << rule.id;
    EXPECT_FALSE(rule.family.empty()) << rule.id;
    EXPECT_FALSE(rule.matches.empty()) << rule.id;
    bool any = false;
    for (auto text : rule.per_target) any = any || !text.empty();
    EXPECT_TRUE(any) << rule.id << " has neither a replacement nor advice";
    if (rule.action == RuleAction::Report)
      for (auto advice : rule.per_target) EXPECT_FALSE(advice.empty()) << rule.id << " lacks advice for a target";
  }
}

TEST(RuleTable, UnknownIdListsTheValidOnes) {
  try {
    rule_by_id("no-such-rule");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tensor.cuda"), std::string::npos);
  }
}

TEST(RuleTable, LongestDottedPrefixWins) {
  EXPECT_EQ(find_torch_api_rule("cuda.amp.autocast")->id, "torch.cuda.amp.autocast");
  EXPECT_EQ(find_torch_api_rule("cuda.amp")->id, "torch.cuda.amp");
  EXPECT_EQ(find_torch_api_rule("cuda.nvtx.range_push")->id, "torch.cuda.nvtx");
  EXPECT_EQ(find_torch_api_rule("cuda.get_device_name")->id, "torch.cuda");
  EXPECT_EQ(find_torch_api_rule("backends.cudnn.benchmark")->id, "torch.backends.cudnn");
  EXPECT_EQ(find_torch_api_rule("cuda.graphs")->id, "torch.cuda.graphs");
  EXPECT_EQ(find_torch_api_rule("cuda.graph")->id, "torch.cuda.graph");
  EXPECT_EQ(find_torch_api_rule("cudax"), nullptr);
  EXPECT_EQ(find_torch_api_rule("nn.Linear"), nullptr);
}

TEST(RuleTable, Targets) {
  EXPECT_EQ(parse_target("npu"), Target::Npu);
  EXPECT_EQ(parse_target("device-agnostic"), Target::DeviceAgnostic);
  EXPECT_EQ(target_name(Target::Cpu), "cpu");
  EXPECT_THROW(parse_target("cuda"), std::invalid_argument);
}

TEST(RuleTable, TemplatesExpandPerTarget) {
  TemplateValues v;
  v.torch = "th";
  v.index = "rank";
  EXPECT_EQ(expand_template("{device_at_index}", Target::DeviceAgnostic, v), "th.device(_accel_device.type, rank)");
  EXPECT_EQ(expand_template("{device_at_index}", Target::Npu, v), "th.device(\"npu\", rank)");
  EXPECT_EQ(expand_template("x.to({device})", Target::Cpu, v), "x.to(\"cpu\")");
  EXPECT_EQ(expand_template("{backend}", Target::Npu, v), "\"hccl\"");
  EXPECT_EQ(expand_template("{unknown} stays", Target::Npu, v), "{unknown} stays");
}

TEST(RuleTable, EveryRuleIsDocumented) {
  std::ifstream in(std::string(CROSSTRAIN_SOURCE_DIR) + "/docs/MIGRATE.md");
  ASSERT_TRUE(in) << "docs/MIGRATE.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  for (const auto& rule : rule_table())
    EXPECT_NE(ss.str().find("| `" + std::string(rule.id) + "` |"), std::string::npos) << rule.id << " not in docs/MIGRATE.md";
}
