#include "api/http_target.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::api {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(PercentDecodeTest, DecodesEscapes) {
  EXPECT_EQ(PercentDecode("a%20b%2Fc%2f", false), "a b/c/");
  EXPECT_EQ(PercentDecode("%E2%9C%93", false), "\xE2\x9C\x93");
  EXPECT_EQ(PercentDecode("%00x", false), std::string("\0x", 2));
}

TEST(PercentDecodeTest, KeepsMalformedEscapesAsSent) {
  EXPECT_EQ(PercentDecode("100%", false), "100%");
  EXPECT_EQ(PercentDecode("%4", false), "%4");
  EXPECT_EQ(PercentDecode("%zz%4g", false), "%zz%4g");
  EXPECT_EQ(PercentDecode("%%41", false), "%A");
}

TEST(PercentDecodeTest, PlusIsASpaceOnlyInQueries) {
  EXPECT_EQ(PercentDecode("a+b%2B", true), "a b+");
  EXPECT_EQ(PercentDecode("a+b", false), "a+b");
}

TEST(ParseTargetTest, SplitsPathAndQuery) {
  RequestTarget t = ParseTarget("/api/v1/series?run=a&run=b+c&metric=loss%2Fval&flag&=v&&x=1=2");
  EXPECT_EQ(t.path, "/api/v1/series");
  EXPECT_THAT(t.query, ElementsAre(Pair("", "v"), Pair("flag", ""), Pair("metric", "loss/val"), Pair("run", "a"),
                                   Pair("run", "b c"), Pair("x", "1=2")));
}

TEST(ParseTargetTest, DecodesThePathButNotPlus) {
  RequestTarget t = ParseTarget("/api/v1/blobs/a%20b+c");
  EXPECT_EQ(t.path, "/api/v1/blobs/a b+c");
  EXPECT_TRUE(t.query.empty());
}

TEST(ParseTargetTest, AcceptsAnyInput) {
  EXPECT_EQ(ParseTarget("").path, "");
  EXPECT_EQ(ParseTarget("?").path, "");
  EXPECT_TRUE(ParseTarget("/x?").query.empty());
  RequestTarget t = ParseTarget("/x?a=1?b=2");
  EXPECT_THAT(t.query, ElementsAre(Pair("a", "1?b=2")));
  EXPECT_THAT(ParseTarget("/x?%3D=%26").query, ElementsAre(Pair("=", "&")));
}

}  // namespace
}  // namespace trainwatch::api
