// MetricWindow against a brute-force recomputation over random data, including non-finite values,
// windows larger than the data, Clear and CopyValuesFrom.
#include "rules/window.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "rules/expr.h"

namespace trainwatch::rules {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The documented semantics, computed from scratch over every value pushed so far.
double BruteForce(WindowFn fn, int64_t n, const std::vector<double>& values) {
  const size_t size = values.size();
  if (fn == WindowFn::kDelta) {
    if (size <= static_cast<size_t>(n)) return kNaN;
    return values[size - 1] - values[size - 1 - static_cast<size_t>(n)];
  }
  const size_t first = size > static_cast<size_t>(n) ? size - static_cast<size_t>(n) : 0;
  std::vector<double> w;
  for (size_t i = first; i < size; ++i) {
    if (!std::isnan(values[i])) w.push_back(values[i]);
  }
  if (w.empty()) return kNaN;
  switch (fn) {
    case WindowFn::kMax:
      return *std::max_element(w.begin(), w.end());
    case WindowFn::kMin:
      return *std::min_element(w.begin(), w.end());
    default:
      break;
  }
  long double sum = 0;
  for (double v : w) sum += v;
  if (std::isnan(static_cast<double>(sum))) return kNaN;  // +inf and -inf together
  return fn == WindowFn::kMean ? static_cast<double>(sum / w.size()) : static_cast<double>(sum);
}

void ExpectSame(double expected, double actual, const char* what, size_t i) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << what << " at value " << i << ": got " << actual;
  } else if (std::isinf(expected)) {
    EXPECT_EQ(expected, actual) << what << " at value " << i;
  } else {
    EXPECT_NEAR(expected, actual, 1e-9 * std::max(1.0, std::fabs(expected)))
        << what << " at value " << i;
  }
}

struct Case {
  const char* name;
  double nan_rate;
  double inf_rate;
  double scale;  // values in [-scale, scale]
};

class WindowRandomTest : public ::testing::TestWithParam<Case> {};

TEST_P(WindowRandomTest, MatchesBruteForce) {
  const Case& c = GetParam();
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> uniform(0, 1);
  const std::vector<int64_t> sizes = {1, 2, 7, 64, 1000};  // 1000 > the 600 values pushed
  const WindowFn fns[] = {WindowFn::kMean, WindowFn::kSum, WindowFn::kMax, WindowFn::kMin,
                          WindowFn::kDelta};
  MetricWindow window;
  struct Stat {
    WindowFn fn;
    int64_t n;
    size_t handle;
  };
  std::vector<Stat> stats;
  for (WindowFn fn : fns) {
    for (int64_t n : sizes) stats.push_back({fn, n, window.Add(fn, n)});
  }
  std::vector<double> values;
  for (size_t i = 0; i < 600; ++i) {
    double v = (uniform(rng) * 2 - 1) * c.scale;
    double r = uniform(rng);
    if (r < c.nan_rate)
      v = kNaN;
    else if (r < c.nan_rate + c.inf_rate)
      v = uniform(rng) < 0.5 ? kInf : -kInf;
    values.push_back(v);
    window.Push(v);
    for (const Stat& s : stats) {
      ExpectSame(BruteForce(s.fn, s.n, values), window.Value(s.handle), WindowFnName(s.fn).data(),
                 i);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Data, WindowRandomTest,
                         ::testing::Values(Case{"finite", 0, 0, 10}, Case{"nan", 0.05, 0, 10},
                                           Case{"inf", 0.01, 0.01, 10}, Case{"large", 0, 0, 1e12}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(WindowTest, SameStatisticSharesAHandle) {
  MetricWindow w;
  size_t a = w.Add(WindowFn::kMean, 10);
  EXPECT_EQ(a, w.Add(WindowFn::kMean, 10));
  EXPECT_NE(a, w.Add(WindowFn::kSum, 10));
  EXPECT_EQ(w.capacity(), 10u);
  w.Add(WindowFn::kDelta, 10);
  EXPECT_EQ(w.capacity(), 11u);  // delta needs the value N back
}

TEST(WindowTest, NoDriftAfterLargeValuesLeave) {
  MetricWindow w;
  size_t mean = w.Add(WindowFn::kMean, 4);
  for (double v : {1e15, -1e15, 3e14, 7.0}) w.Push(v);
  for (int i = 0; i < 4; ++i) w.Push(0.1);
  EXPECT_DOUBLE_EQ(0.1, w.Value(mean));
}

TEST(WindowTest, InfinityLeavesTheWindow) {
  MetricWindow w;
  size_t sum = w.Add(WindowFn::kSum, 2);
  w.Push(kInf);
  EXPECT_EQ(kInf, w.Value(sum));
  w.Push(1);
  w.Push(2);
  EXPECT_EQ(3, w.Value(sum));
}

TEST(WindowTest, OnlyNaNGivesNaN) {
  MetricWindow w;
  size_t mean = w.Add(WindowFn::kMean, 3);
  size_t max = w.Add(WindowFn::kMax, 3);
  w.Push(kNaN);
  EXPECT_TRUE(std::isnan(w.Value(mean)));
  EXPECT_TRUE(std::isnan(w.Value(max)));
  w.Push(2);
  EXPECT_EQ(2, w.Value(mean));
  EXPECT_EQ(2, w.Value(max));
}

TEST(WindowTest, ClearForgetsValues) {
  MetricWindow w;
  size_t max = w.Add(WindowFn::kMax, 5);
  size_t delta = w.Add(WindowFn::kDelta, 1);
  w.Push(9);
  w.Push(1);
  EXPECT_EQ(-8, w.Value(delta));
  w.Clear();
  EXPECT_EQ(0, w.pushed());
  EXPECT_TRUE(std::isnan(w.Value(max)));
  w.Push(3);
  EXPECT_EQ(3, w.Value(max));
  EXPECT_TRUE(std::isnan(w.Value(delta)));
}

TEST(WindowTest, CopyValuesFromReplaysWhatTheNewWindowNeeds) {
  MetricWindow old_window;
  old_window.Add(WindowFn::kMean, 3);
  for (double v : {1, 2, 3, 4, 5}) old_window.Push(v);  // holds 3, 4, 5
  MetricWindow bigger;
  size_t sum = bigger.Add(WindowFn::kSum, 10);
  size_t min = bigger.Add(WindowFn::kMin, 2);
  bigger.CopyValuesFrom(old_window);
  EXPECT_EQ(12, bigger.Value(sum));  // only what the old window held
  EXPECT_EQ(4, bigger.Value(min));
  MetricWindow smaller;
  size_t last = smaller.Add(WindowFn::kMax, 1);
  smaller.CopyValuesFrom(old_window);
  EXPECT_EQ(5, smaller.Value(last));
  EXPECT_EQ(1, smaller.pushed());
}

}  // namespace
}  // namespace trainwatch::rules
