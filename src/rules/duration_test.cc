// Durations, holds and project globs.
#include "rules/duration.h"

#include <gtest/gtest.h>

#include "common/glob.h"

namespace trainwatch::rules {
namespace {

TEST(DurationTest, Parses) {
  EXPECT_EQ(30, *ParseDuration("30s"));
  EXPECT_EQ(600, *ParseDuration("10m"));
  EXPECT_EQ(3600, *ParseDuration("1h"));
  EXPECT_EQ(5400, *ParseDuration("1h30m"));
  EXPECT_EQ(5400, *ParseDuration("1.5h"));
  EXPECT_EQ(86400 * 8, *ParseDuration("1w1d"));
  EXPECT_DOUBLE_EQ(0.25, *ParseDuration("250ms"));
  EXPECT_EQ(300, *ParseDuration("300"));
  EXPECT_EQ(0, *ParseDuration("0"));
  EXPECT_EQ(60, *ParseDuration(" 60s "));
}

TEST(DurationTest, Rejects) {
  for (const char* bad : {"", "s", "-5s", "10x", "10m5", "1e3s", "inf", "nan", "5 s", "m10"}) {
    Result<double> d = ParseDuration(bad);
    EXPECT_FALSE(d.ok()) << bad;
  }
  EXPECT_EQ("bad duration '10x' (unknown unit 'x'; use ms, s, m, h, d or w)",
            ParseDuration("10x").status().message());
}

TEST(HoldTest, Parses) {
  Result<Hold> h = ParseHold("10m");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(Hold::Unit::kSeconds, h->unit);
  EXPECT_EQ(600, h->seconds);
  EXPECT_EQ("600s", h->ToString());
  h = ParseHold("200 steps");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(Hold::Unit::kSteps, h->unit);
  EXPECT_EQ(200, h->steps);
  EXPECT_EQ("200 steps", h->ToString());
  EXPECT_EQ(1, ParseHold("1 step")->steps);
  EXPECT_EQ(5, ParseHold("5steps")->steps);
  for (const char* none : {"0", "0s", "0 steps", "0m"}) {
    ASSERT_TRUE(ParseHold(none).ok()) << none;
    EXPECT_EQ(Hold::Unit::kNone, ParseHold(none)->unit) << none;
  }
}

TEST(HoldTest, Rejects) {
  EXPECT_EQ("bad hold '30': give a unit, e.g. '10m' (record time) or '200 steps'",
            ParseHold("30").status().message());
  EXPECT_EQ("bad hold '2.5 steps': expected a whole number of steps",
            ParseHold("2.5 steps").status().message());
  EXPECT_FALSE(ParseHold("steps").ok());
  EXPECT_FALSE(ParseHold("-3 steps").ok());
  EXPECT_FALSE(ParseHold("soon").ok());
}

TEST(GlobTest, Matches) {
  EXPECT_TRUE(GlobMatch("nlp-*", "nlp-bert"));
  EXPECT_TRUE(GlobMatch("nlp-*", "nlp-"));
  EXPECT_FALSE(GlobMatch("nlp-*", "vision-nlp-x"));
  EXPECT_TRUE(GlobMatch("*-prod", "nlp-prod"));
  EXPECT_TRUE(GlobMatch("*a*b*", "xxaxxbxx"));
  EXPECT_FALSE(GlobMatch("*a*b*", "xxbxxaxx"));
  EXPECT_TRUE(GlobMatch("run-?", "run-1"));
  EXPECT_FALSE(GlobMatch("run-?", "run-10"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("exact", "exact"));
  EXPECT_FALSE(GlobMatch("exact", "exactly"));
  EXPECT_TRUE(IsGlob("a*"));
  EXPECT_TRUE(IsGlob("a?"));
  EXPECT_FALSE(IsGlob("a-b"));
}

}  // namespace
}  // namespace trainwatch::rules
