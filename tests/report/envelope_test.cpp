#include "report/envelope.h"

#include <gtest/gtest.h>

#include "report/output.h"

using namespace crosstrain::report;

TEST(Envelope, SetsTheFourKeysOverTheDocument) {
  const char* argv[] = {"crosstrain", "analyze", "t.json", "--json", "-"};
  set_command_line(5, argv);
  const auto doc = with_envelope("analyze", {{"kind", "stale"}, {"schema_version", 0}, {"traces", {1, 2}}});
  EXPECT_EQ(doc["schema_version"], kJsonSchemaVersion);
  EXPECT_EQ(doc["kind"], "analyze");
  EXPECT_EQ(doc["crosstrain_version"], crosstrain_version());
  EXPECT_EQ(doc["argv"], nlohmann::json({"crosstrain", "analyze", "t.json", "--json", "-"}));
  EXPECT_EQ(doc["traces"], nlohmann::json({1, 2}));  // the command's keys stay
  EXPECT_EQ(doc.size(), 5u);
}

TEST(Envelope, VersionIsTheProjectsAndADocumentMustBeAnObject) {
  EXPECT_STRNE(crosstrain_version(), "unknown");
  EXPECT_THROW(with_envelope("x", nlohmann::json::array()), std::invalid_argument);
  set_command_line(0, nullptr);
  EXPECT_EQ(with_envelope("x", nlohmann::json::object())["argv"], nlohmann::json::array());
}
