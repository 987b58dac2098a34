#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "prom/promql_eval.h"
#include "prom/promql_parser.h"

namespace trainwatch::prom {
namespace {

using ::testing::HasSubstr;

// Series held in memory, selected as the store would select them.
class MemorySource final : public SeriesSource {
 public:
  std::vector<SeriesPoints> series;
  Result<std::vector<SeriesPoints>> Select(const std::vector<LabelMatcher>& matchers, int64_t from,
                                           int64_t to) override {
    std::vector<SeriesPoints> out;
    for (const SeriesPoints& s : series) {
      bool ok = true;
      for (const LabelMatcher& m : matchers) {
        auto it = s.labels.find(m.name);
        const std::string v = it == s.labels.end() ? "" : it->second;
        if (m.op == LabelMatcher::Op::kEqual) ok = ok && v == m.value;
        if (m.op == LabelMatcher::Op::kNotEqual) ok = ok && v != m.value;
        if (m.op == LabelMatcher::Op::kRegex) ok = ok && v.find(m.value) != std::string::npos;
      }
      if (!ok) continue;
      SeriesPoints w{s.labels, {}};
      for (const auto& p : s.points) {
        if (p.first >= from && p.first <= to) w.points.push_back(p);
      }
      out.push_back(std::move(w));
    }
    return out;
  }
};

ExprPtr Parse(std::string_view q) {
  auto e = ParsePromQL(q);
  EXPECT_TRUE(e.ok()) << q << ": " << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

class PromQLTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // loss of two runs every 10 s from t=0; a counter rising 1 per 10 s with a reset at 300 s.
    for (const char* run : {"r1", "r2"}) {
      SeriesPoints s{{{"__name__", "training_metrics"}, {"metric_name", "loss"}, {"run", run}}, {}};
      for (int i = 0; i <= 60; ++i)
        s.points.emplace_back(i * 10'000, (run[1] - '0') * 1.0 / (i + 1));
      source_.series.push_back(std::move(s));
    }
    SeriesPoints c{{{"__name__", "training_metrics"}, {"metric_name", "samples"}, {"run", "r1"}},
                   {}};
    for (int i = 0; i <= 60; ++i) c.points.emplace_back(i * 10'000, i < 30 ? i : i - 30);
    source_.series.push_back(std::move(c));
  }

  InstantValue At(std::string_view q, int64_t t) {
    ExprPtr e = Parse(q);
    auto v = EvalInstant(*e, t, source_);
    EXPECT_TRUE(v.ok()) << q << ": " << v.status().ToString();
    return v.ok() ? *v : InstantValue{};
  }

  MemorySource source_;
};

TEST_F(PromQLTest, SelectorsLookBackFiveMinutesAndOffset) {
  InstantValue v = At("training_metrics{metric_name=\"loss\"}", 105'000);
  ASSERT_EQ(v.vector.size(), 2u);
  EXPECT_EQ(v.vector[0].value, 1.0 / 11) << "the newest sample at or before t";
  EXPECT_TRUE(
      At("training_metrics{metric_name=\"loss\"}", 600'000 + kLookbackMs + 1).vector.empty())
      << "nothing newer than 5 minutes";
  EXPECT_EQ(
      At("training_metrics{metric_name=\"loss\",run=\"r1\"} offset 1m", 105'000).vector[0].value,
      1.0 / 5);
}

TEST_F(PromQLTest, RateAndIncreaseExtrapolateAsPrometheus) {
  // 1 per 10 s over a 1 m window fully covered: rate 0.1/s, increase 6 (5 intervals +
  // extrapolation).
  InstantValue rate = At("rate(training_metrics{metric_name=\"samples\"}[1m])", 200'000);
  ASSERT_EQ(rate.vector.size(), 1u);
  EXPECT_NEAR(rate.vector[0].value, 0.1, 1e-12);
  EXPECT_EQ(rate.vector[0].labels.count("__name__"), 0u) << "functions drop the metric name";
  EXPECT_NEAR(
      At("increase(training_metrics{metric_name=\"samples\"}[1m])", 200'000).vector[0].value, 6,
      1e-9);
  // Across the reset at 300 s (29 then 0) the counter's rises still count: 2 before, 3 after.
  EXPECT_NEAR(
      At("increase(training_metrics{metric_name=\"samples\"}[1m])", 330'000).vector[0].value, 5,
      1e-9);
  EXPECT_NEAR(At("delta(training_metrics{metric_name=\"samples\"}[1m])", 330'000).vector[0].value,
              -24, 1e-9);
  EXPECT_NEAR(At("deriv(training_metrics{metric_name=\"samples\"}[1m])", 200'000).vector[0].value,
              0.1, 1e-12);
  EXPECT_EQ(At("max_over_time(training_metrics{metric_name=\"loss\",run=\"r2\"}[1m])", 100'000)
                .vector[0]
                .value,
            2.0 / 5);
  EXPECT_EQ(At("count_over_time(training_metrics{metric_name=\"loss\",run=\"r2\"}[1m])", 100'000)
                .vector[0]
                .value,
            7);
}

TEST_F(PromQLTest, AggregationsAndBinaryOperators) {
  InstantValue sum = At("sum by (metric_name) (training_metrics{metric_name=\"loss\"})", 0);
  ASSERT_EQ(sum.vector.size(), 1u);
  EXPECT_EQ(sum.vector[0].value, 3.0);
  EXPECT_EQ(sum.vector[0].labels, (Labels{{"metric_name", "loss"}}));
  EXPECT_EQ(At("count without (run) (training_metrics{metric_name=\"loss\"})", 0).vector[0].value,
            2);
  InstantValue top = At("topk(1, training_metrics{metric_name=\"loss\"})", 0);
  ASSERT_EQ(top.vector.size(), 1u);
  EXPECT_EQ(top.vector[0].labels.at("run"), "r2");
  // The seed's alert rule: a filter keeps the samples over the threshold, as they were.
  InstantValue high = At("training_metrics{metric_name=\"loss\"} > 0.5", 10'000);
  ASSERT_EQ(high.vector.size(), 1u);
  EXPECT_EQ(high.vector[0].labels.at("__name__"), "training_metrics");
  EXPECT_EQ(At("training_metrics{metric_name=\"loss\"} > bool 0.5", 10'000).vector.size(), 2u);
  InstantValue ratio =
      At("training_metrics{run=\"r2\",metric_name=\"loss\"} / on (metric_name) "
         "training_metrics{run=\"r1\",metric_name=\"loss\"}",
         0);
  ASSERT_EQ(ratio.vector.size(), 1u);
  EXPECT_EQ(ratio.vector[0].value, 2.0);
  EXPECT_EQ(ratio.vector[0].labels, (Labels{{"metric_name", "loss"}}));
  EXPECT_EQ(At("1 + 1", 0).scalar, 2);
  EXPECT_EQ(At("2 ^ 3 ^ 2", 0).scalar, 512) << "^ is right-associative";
  EXPECT_EQ(At("-training_metrics{metric_name=\"loss\",run=\"r1\"}", 0).vector[0].value, -1);
}

TEST_F(PromQLTest, RangeQueriesEvaluateAtEveryStep) {
  ExprPtr e = Parse("avg(training_metrics{metric_name=\"loss\"})");
  bool scalar = false;
  auto r = EvalRange(*e, 0, 60'000, 20'000, source_, &scalar);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  ASSERT_EQ((*r)[0].points.size(), 4u);
  EXPECT_EQ((*r)[0].points[3].first, 60'000);
  EXPECT_DOUBLE_EQ((*r)[0].points[3].second, 1.5 / 7);
  EXPECT_FALSE(EvalRange(*e, 0, 10, 0, source_, &scalar).ok());
}

TEST(PromQLParserTest, ErrorsSayWhere) {
  auto bad = [](std::string_view q) {
    auto e = ParsePromQL(q);
    EXPECT_FALSE(e.ok()) << q;
    return e.ok() ? std::string() : e.status().message();
  };
  EXPECT_THAT(bad("sum("), HasSubstr("parse error at char 5"));
  EXPECT_THAT(bad("{}"), HasSubstr("vector selector must contain at least one non-empty matcher"));
  EXPECT_THAT(bad("x[5x]"), HasSubstr("not a valid duration string"));
  EXPECT_THAT(bad("x{a=b}"), HasSubstr("expected a string"));
  EXPECT_THAT(bad("rate(x[5m:1m])"), HasSubstr("subqueries are not supported"));
  EXPECT_THAT(bad("topk(x)"), HasSubstr("expected 2, got 1"));
  EXPECT_THAT(bad(std::string(200, '(') + "1" + std::string(200, ')')),
              HasSubstr("nested deeper than 64"));
  EXPECT_EQ(ParsePromDuration("1h30m").value(), 5'400'000);
  EXPECT_EQ(ParsePromDuration("500ms").value(), 500);
}

TEST(PromQLParserTest, UnknownFunctionIsAnEvaluationError) {
  MemorySource empty;
  auto e = ParsePromQL("nope(1)");
  ASSERT_TRUE(e.ok());
  auto v = EvalInstant(**e, 0, empty);
  EXPECT_THAT(v.status().message(), HasSubstr("unknown function with name \"nope\""));
}

}  // namespace
}  // namespace trainwatch::prom
