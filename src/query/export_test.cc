#include "query/export.h"

#include <gtest/gtest.h>

#include <limits>
#include <utility>
#include <vector>

namespace trainwatch::query {
namespace {

std::vector<std::pair<int64_t, int64_t>> Windows(const ExportPlan& plan) {
  ExportCursor cursor(plan);
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t from, to;
  while (cursor.Next(&from, &to)) {
    out.emplace_back(from, to);
    EXPECT_EQ(cursor.done(), to == plan.last_step);
    if (out.size() > 1000) break;  // a cursor that never ends fails below, not here
  }
  EXPECT_TRUE(cursor.done());
  return out;
}

ExportPlan Plan(int64_t first, int64_t last, uint64_t points) {
  ExportPlan plan;
  plan.metrics = {"loss"};
  plan.first_step = first;
  plan.last_step = last;
  plan.points = points;
  return plan;
}

TEST(ExportCursorTest, WindowsHoldAboutAPieceOfPointsAndCoverEveryStep) {
  // 200,000 steps of one point each: windows of 65,536 steps, the last one shorter.
  auto windows = Windows(Plan(0, 199'999, 200'000));
  ASSERT_EQ(windows.size(), 4u);
  EXPECT_EQ(windows[0].first, 0);
  EXPECT_EQ(windows[0].second, 65'535);
  EXPECT_EQ(windows[1].first, 65'536);
  EXPECT_EQ(windows[3].second, 199'999);
  // Sparse steps (one point per 1,000 steps): windows 1,000 times wider.
  windows = Windows(Plan(0, 99'999'999, 100'000));
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_EQ(windows[0].second, 65'535'999);
}

TEST(ExportCursorTest, NothingToExportIsDoneAtOnce) {
  EXPECT_TRUE(Windows(ExportPlan{}).empty());
  ExportPlan no_metrics = Plan(0, 10, 11);
  no_metrics.metrics.clear();
  EXPECT_TRUE(Windows(no_metrics).empty());
}

TEST(ExportCursorTest, ExactAtTheEndsOfTheStepRange) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(),
                    kMax = std::numeric_limits<int64_t>::max();
  auto windows = Windows(Plan(kMin, kMax, 2));  // two points, at both ends
  ASSERT_FALSE(windows.empty());
  EXPECT_EQ(windows.front().first, kMin);
  EXPECT_EQ(windows.back().second, kMax);
  for (size_t i = 1; i < windows.size(); ++i)
    EXPECT_EQ(windows[i].first, windows[i - 1].second + 1);
  EXPECT_EQ(Windows(Plan(kMax, kMax, 1)), (std::vector<std::pair<int64_t, int64_t>>{{kMax, kMax}}));
}

}  // namespace
}  // namespace trainwatch::query
