// Expressions: precedence and names (canonical forms), every parse error with its column, and
// evaluation semantics (NaN, value reporting).
#include "rules/expr.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace trainwatch::rules {
namespace {

using ::testing::ElementsAre;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct CanonicalCase {
  const char* text;
  const char* canonical;
};

class CanonicalTest : public ::testing::TestWithParam<CanonicalCase> {};

TEST_P(CanonicalTest, Parses) {
  Result<Expr> e = Expr::Parse(GetParam().text);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(GetParam().canonical, e->Canonical());
  Result<Expr> again = Expr::Parse(e->Canonical());  // the canonical form parses to itself
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(e->Canonical(), again->Canonical());
}

INSTANTIATE_TEST_SUITE_P(
    Grammar, CanonicalTest,
    ::testing::Values(
        CanonicalCase{"loss > 0.5", "(loss > 0.5)"},
        CanonicalCase{"a + b * c > d - e / f", "((a + (b * c)) > (d - (e / f)))"},
        CanonicalCase{"(a + b) * c >= 1", "(((a + b) * c) >= 1)"},
        CanonicalCase{"a - b - c < 0", "(((a - b) - c) < 0)"},
        CanonicalCase{"-a * -b == 1", "(((-a) * (-b)) == 1)"}, CanonicalCase{"+a != 2", "(a != 2)"},
        CanonicalCase{"a > 1 or b > 2 and c > 3", "((a > 1) or ((b > 2) and (c > 3)))"},
        CanonicalCase{"not a > 1 and b > 1", "((not (a > 1)) and (b > 1))"},
        CanonicalCase{"not not isnan(a)", "(not (not isnan(a)))"},
        CanonicalCase{"x > 1e-3 and y < 2.5E+2 and z > .5",
                      "(((x > 0.001) and (y < 250)) and (z > 0.5))"},
        CanonicalCase{"x < inf and x > -Inf", "((x < inf) and (x > (-inf)))"},
        CanonicalCase{"x != NaN", "(x != nan)"},
        // Names: '/' between name characters belongs to the name; with a space it divides.
        CanonicalCase{"train/loss > 1", "(train/loss > 1)"},
        CanonicalCase{"train/loss / val/loss > 1", "((train/loss / val/loss) > 1)"},
        CanonicalCase{"a /b > 1", "((a / b) > 1)"}, CanonicalCase{"a/ b > 1", "((a / b) > 1)"},
        CanonicalCase{"2/a > 1", "((2 / a) > 1)"}, CanonicalCase{"(a)/b > 1", "((a / b) > 1)"},
        CanonicalCase{"grad_norm/layer.0/w:1 > 1", "(grad_norm/layer.0/w:1 > 1)"},
        CanonicalCase{"`val/acc@1` < 0.5", "(`val/acc@1` < 0.5)"},
        CanonicalCase{"`lr` > 1", "(lr > 1)"}, CanonicalCase{"`and` > 1", "(`and` > 1)"},
        CanonicalCase{"`val-acc` > 1", "(`val-acc` > 1)"},
        CanonicalCase{"a-b > 1", "((a - b) > 1)"},
        CanonicalCase{"mean(loss, 100) > 2 * min(`a b`, 5)",
                      "(mean(loss, 100) > (2 * min(`a b`, 5)))"},
        CanonicalCase{"delta(train/loss, 10) > 0 and sum(x,3) < max(x, 1e2)",
                      "((delta(train/loss, 10) > 0) and (sum(x, 3) < max(x, 100)))"},
        CanonicalCase{"abs(a - b) > 1 or isfinite(a / b)",
                      "((abs((a - b)) > 1) or isfinite((a / b)))"},
        CanonicalCase{"mean > 1", "(mean > 1)"},  // a metric named like a function
        CanonicalCase{"a > 1 AND b > 1", "((a > 1) and (b > 1))"}));

struct ErrorCase {
  const char* text;
  const char* message;
};

class ParseErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ParseErrorTest, NamesTheColumn) {
  Result<Expr> e = Expr::Parse(GetParam().text);
  ASSERT_FALSE(e.ok()) << GetParam().text;
  EXPECT_EQ(StatusCode::kInvalidArgument, e.status().code());
  EXPECT_EQ(GetParam().message, e.status().message());
}

INSTANTIATE_TEST_SUITE_P(
    Errors, ParseErrorTest,
    ::testing::Values(
        ErrorCase{"loss > ", "column 8: expected a number or a metric name after '>'"},
        ErrorCase{"loss > )", "column 8: expected a number or a metric name after '>', got ')'"},
        ErrorCase{"", "column 1: empty expression"}, ErrorCase{"   ", "column 1: empty expression"},
        ErrorCase{
            "loss",
            "column 1: the expression is a number, not a condition; compare it, e.g. 'loss > 1'"},
        ErrorCase{"1 > 0", "column 1: the expression reads no metric"},
        ErrorCase{"loss 0.5", "column 6: expected an operator, got '0.5'"},
        ErrorCase{"loss > 0.5)", "column 11: unmatched ')'"},
        ErrorCase{"(loss > 0.5",
                  "column 12: expected ')' to close the '(' at column 1, got the end"},
        ErrorCase{"loss = 1", "column 6: '=' is not an operator; compare with '=='"},
        ErrorCase{"!isnan(x)", "column 1: '!' is not an operator; negate with 'not'"},
        ErrorCase{"a > 1 && b > 1", "column 7: '&' is not an operator; use 'and'"},
        ErrorCase{"a > 1 || b > 1", "column 7: '|' is not an operator; use 'or'"},
        ErrorCase{"val@1 > 1",
                  "column 4: unexpected character '@' (quote metric names with unusual characters "
                  "in backticks: "
                  "`val/acc@1`)"},
        ErrorCase{"`val > 1", "column 1: unterminated `quoted name`: missing the closing backtick"},
        ErrorCase{"`` > 1", "column 1: empty `quoted name`"},
        ErrorCase{"loss > 10m", "column 10: unexpected 'm' after the number '10'"},
        ErrorCase{"a > 1 > 0", "column 7: comparisons cannot be chained; combine them with 'and'"},
        ErrorCase{"(a > 1) + 1 > 0", "column 9: '+' needs a number on its left, got a condition"},
        ErrorCase{"a and b > 1",
                  "column 3: 'and' needs a condition on its left, got a number (compare it, e.g. "
                  "'loss > 1')"},
        ErrorCase{"a > 1 or b",
                  "column 7: 'or' needs a condition on its right, got a number (compare it, e.g. "
                  "'loss > 1')"},
        ErrorCase{"not a",
                  "column 1: 'not' needs a condition on its right, got a number (compare it, e.g. "
                  "'loss > 1')"},
        ErrorCase{"-(a > 1)", "column 1: '-' needs a number on its right, got a condition"},
        ErrorCase{"foo(a) > 1",
                  "column 1: unknown function 'foo' (functions: mean, sum, max, min, delta, abs, "
                  "isnan, isfinite)"},
        ErrorCase{
            "mean(a) > 1",
            "column 7: mean() takes a metric name and a number of records, e.g. mean(loss, 100)"},
        ErrorCase{
            "mean(1, 2) > 1",
            "column 6: mean() takes a metric name and a number of records, e.g. mean(loss, 100)"},
        ErrorCase{
            "max(a, n) > 1",
            "column 8: max() takes a metric name and a number of records, e.g. max(loss, 100)"},
        ErrorCase{
            "min(abs(a), 2) > 1",
            "column 5: min() takes a metric name and a number of records, e.g. min(loss, 100)"},
        ErrorCase{"sum(a, 0) > 1",
                  "column 8: the window of sum() must be a whole number of records from 1 to "
                  "100000, got 0"},
        ErrorCase{"sum(a, 2.5) > 1",
                  "column 8: the window of sum() must be a whole number of records from 1 to "
                  "100000, got 2.5"},
        ErrorCase{"delta(a, 100001) > 1",
                  "column 10: the window of delta() must be a whole number of records from 1 to "
                  "100000, got 100001"},
        ErrorCase{"mean(a, 3 > 1", "column 11: expected ')' to close mean( at column 1, got '>'"},
        ErrorCase{"isnan(a > 1)", "column 1: isnan() needs a number, got a condition"},
        ErrorCase{"a > 1e", "column 6: unexpected 'e' after the number '1'"}));

TEST(ExprTest, AMetricComparedWithArithmeticIsFine) {
  Result<Expr> e = Expr::Parse("a > 1 + 1");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ("(a > (1 + 1))", e->Canonical());
}

TEST(ExprTest, DeepNestingIsAnErrorNotACrash) {
  std::string text(200, '(');
  text += "a > 1";
  text += std::string(200, ')');
  Result<Expr> e = Expr::Parse(text);
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), ::testing::HasSubstr("nests too deeply"));
  EXPECT_FALSE(Expr::Parse(std::string(kMaxExprLength + 1, 'a')).ok());
}

TEST(ExprTest, MetricsAndWindowsInOrderOfAppearance) {
  Result<Expr> e =
      Expr::Parse("mean(g, 10) > 1 and loss > 2 and max(g, 5) > mean(g, 10) and `x y` > 0");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_THAT(e->metrics(), ElementsAre("g", "loss", "x y"));
  ASSERT_EQ(2u, e->windows().size());
  EXPECT_EQ((WindowRef{WindowFn::kMean, "g", 10}), e->windows()[0]);
  EXPECT_EQ((WindowRef{WindowFn::kMax, "g", 5}), e->windows()[1]);
}

Expr::Outcome Eval(const char* text, std::vector<double> latest, std::vector<double> windows = {}) {
  Result<Expr> e = Expr::Parse(text);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e->Evaluate(latest, windows);
}

TEST(ExprTest, EvaluatesWithPrecedence) {
  EXPECT_TRUE(Eval("a + 2 * b == 7", {1, 3}).holds);
  EXPECT_TRUE(Eval("a - b - 1 == -3", {1, 3}).holds);
  EXPECT_TRUE(Eval("a / b * 3 == 1", {1, 3}).holds);
  EXPECT_TRUE(Eval("val_loss > 1.5 * train_loss", {1.6, 1.0}).holds);
  EXPECT_FALSE(Eval("val_loss > 1.5 * train_loss", {1.4, 1.0}).holds);
  EXPECT_TRUE(Eval("a > 1 or b > 1 and a > 5", {2, 0}).holds);
  EXPECT_FALSE(Eval("(a > 1 or b > 1) and a > 5", {2, 0}).holds);
  EXPECT_TRUE(Eval("abs(a) >= 2", {-2}).holds);
}

TEST(ExprTest, ComparisonsWithNaNAreFalse) {
  for (const char* text : {"a > 1", "a < 1", "a >= 1", "a <= 1", "a == a", "a != 1"}) {
    EXPECT_FALSE(Eval(text, {kNaN}).holds) << text;
  }
  EXPECT_TRUE(Eval("not a > 1", {kNaN}).holds);
  EXPECT_TRUE(Eval("isnan(a)", {kNaN}).holds);
  EXPECT_FALSE(Eval("isfinite(a)", {kNaN}).holds);
  EXPECT_FALSE(Eval("isfinite(a)", {std::numeric_limits<double>::infinity()}).holds);
  EXPECT_TRUE(Eval("isnan(a / b)", {0, 0}).holds);   // 0/0
  EXPECT_TRUE(Eval("a / b > 1e300", {1, 0}).holds);  // 1/0 = +inf
  EXPECT_TRUE(Eval("isnan(a) or a > 1", {kNaN}).holds);
}

TEST(ExprTest, ValueIsTheFirstComparisonsLeftHandSide) {
  Expr::Outcome o = Eval("mean(g, 10) > 10 and max(g, 10) > 50", {7}, {12, 60});
  EXPECT_TRUE(o.holds);
  EXPECT_EQ(12, o.value);
  EXPECT_EQ(2.5, Eval("a * 2 + b > 0", {1, 0.5}).value);
  EXPECT_EQ(3, Eval("not (a > 5)", {3}).value);
  // Without a comparison: the first metric's newest value.
  EXPECT_TRUE(std::isnan(Eval("isnan(loss)", {kNaN}).value));
  EXPECT_EQ(4, Eval("isfinite(b) and isfinite(a)", {4, 5}).value);
}

TEST(ExprTest, BareMetricNames) {
  EXPECT_TRUE(IsBareMetricName("train/loss"));
  EXPECT_TRUE(IsBareMetricName("grad_norm/layer.0"));
  EXPECT_TRUE(IsBareMetricName("_x:y"));
  EXPECT_FALSE(IsBareMetricName("val-acc"));
  EXPECT_FALSE(IsBareMetricName("loss/"));
  EXPECT_FALSE(IsBareMetricName("a//b"));
  EXPECT_FALSE(IsBareMetricName("1st"));
  EXPECT_FALSE(IsBareMetricName("Inf"));
  EXPECT_FALSE(IsBareMetricName(""));
}

}  // namespace
}  // namespace trainwatch::rules
