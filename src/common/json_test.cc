#include "common/json.h"

#include <string>

#include <gtest/gtest.h>

namespace trainwatch {
namespace {

TEST(ParseJson, ParsesDocumentsWithinTheDepthLimit) {
  auto doc = ParseJson(R"({"a": [1, {"b": "]]]]{{{{\"x"}], "c": null})", 3);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ((*doc)["a"][1]["b"], "]]]]{{{{\"x");  // brackets inside strings do not count
}

TEST(ParseJson, RefusesNestingBeyondTheLimitBeforeParsing) {
  std::string deep(100000, '[');  // the 200 KB body that used to crash the server in dump()
  deep += std::string(100000, ']');
  auto doc = ParseJson(deep);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(doc.status().message(), "JSON nested deeper than 64 levels at byte 64");
}

TEST(ParseJson, ExactlyTheLimitIsAccepted) {
  std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(ParseJson(at_limit).ok());
  EXPECT_FALSE(ParseJson("[" + at_limit + "]").ok());
}

TEST(ParseJson, NamesTheByteOfASyntaxError) {
  auto doc = ParseJson(R"({"a": 1,, "b": 2})");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("invalid JSON at byte 9"), std::string::npos)
      << doc.status().message();
}

TEST(ParseJson, ANumberBeyondADoubleIsAnErrorNotAThrow) {
  auto doc = ParseJson(R"({"lr": 1e999})");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("number overflow"), std::string::npos) << doc.status().message();
  EXPECT_TRUE(ParseJsonOrDiscarded(R"({"lr": 1e999})").is_discarded());
}

TEST(ParseJson, EscapedQuotesAndBackslashesKeepTheStringOpen) {
  EXPECT_EQ(JsonDepthExceededAt(R"(["\\", "\"[[[["])", 1), std::string_view::npos);
  EXPECT_EQ(JsonDepthExceededAt(R"(["\\", [)", 1), 7u);
}

TEST(ParseJsonOrDiscarded, TooDeepOrMalformedIsDiscarded) {
  EXPECT_TRUE(ParseJsonOrDiscarded("[[[1]]]", 2).is_discarded());
  EXPECT_TRUE(ParseJsonOrDiscarded("{\"a\":").is_discarded());
  EXPECT_EQ(ParseJsonOrDiscarded("{\"a\": 1}")["a"], 1);
}

}  // namespace
}  // namespace trainwatch
