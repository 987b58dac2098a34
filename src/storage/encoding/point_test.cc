#include "storage/encoding/point.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace trainwatch::storage {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

Summary Summarize(const std::vector<Point>& points) {
  Summary s;
  for (const Point& p : points) s.Add(p);
  return s;
}

TEST(Summary, EmptyHasSentinels) {
  Summary s;
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.min, kInf);
  EXPECT_EQ(s.max, -kInf);
}

TEST(Summary, AddTracksEverything) {
  Summary s = Summarize({{10, 100.5, 3.0}, {11, 101.0, -1.0}, {15, 99.0, 7.0}});
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(s.nan_count, 0u);
  EXPECT_EQ(s.min, -1.0);
  EXPECT_EQ(s.max, 7.0);
  EXPECT_EQ(s.sum, 9.0);
  EXPECT_EQ(s.first, 3.0);
  EXPECT_EQ(s.last, 7.0);
  EXPECT_EQ(s.first_step, 10);
  EXPECT_EQ(s.last_step, 15);
  EXPECT_EQ(s.min_time, 99.0);
  EXPECT_EQ(s.max_time, 101.0);
}

TEST(Summary, NaNIsCountedButTakesNoPartInMinMaxSum) {
  Summary s = Summarize({{1, 0, kNaN}, {2, 0, 2.0}, {3, 0, kNaN}});
  EXPECT_EQ(s.count, 3u);
  EXPECT_EQ(s.nan_count, 2u);
  EXPECT_EQ(s.min, 2.0);
  EXPECT_EQ(s.max, 2.0);
  EXPECT_EQ(s.sum, 2.0);
  EXPECT_TRUE(std::isnan(s.first));
  EXPECT_TRUE(std::isnan(s.last));
}

TEST(Summary, AllNaNKeepsSentinelMinMax) {
  Summary s = Summarize({{1, 0, kNaN}});
  EXPECT_EQ(s.nan_count, 1u);
  EXPECT_EQ(s.min, kInf);
  EXPECT_EQ(s.max, -kInf);
  EXPECT_EQ(s.sum, 0.0);
}

TEST(Summary, InfinitiesTakePartInMinMaxButNotSum) {
  Summary s = Summarize({{1, 0, kInf}, {2, 0, 1.5}, {3, 0, -kInf}});
  EXPECT_EQ(s.min, -kInf);
  EXPECT_EQ(s.max, kInf);
  EXPECT_EQ(s.sum, 1.5);
  EXPECT_EQ(s.first, kInf);
  EXPECT_EQ(s.last, -kInf);
}

TEST(Summary, MergeEqualsAddingEverything) {
  const std::vector<Point> points = {{1, 5, 4.0},  {2, 6, kNaN}, {3, 4, -2.0},
                                     {4, 9, kInf}, {5, 7, 0.5},  {6, 8, kNaN}};
  const Summary whole = Summarize(points);
  for (size_t cut = 0; cut <= points.size(); ++cut) {
    Summary a = Summarize({points.begin(), points.begin() + cut});
    a.Merge(Summarize({points.begin() + cut, points.end()}));
    EXPECT_EQ(a.count, whole.count) << cut;
    EXPECT_EQ(a.nan_count, whole.nan_count) << cut;
    EXPECT_EQ(a.min, whole.min) << cut;
    EXPECT_EQ(a.max, whole.max) << cut;
    EXPECT_EQ(a.sum, whole.sum) << cut;
    EXPECT_EQ(a.first, whole.first) << cut;
    EXPECT_TRUE(std::isnan(a.last)) << cut;
    EXPECT_EQ(a.first_step, 1) << cut;
    EXPECT_EQ(a.last_step, 6) << cut;
    EXPECT_EQ(a.min_time, 4.0) << cut;
    EXPECT_EQ(a.max_time, 9.0) << cut;
  }
}

TEST(Summary, MergeIntoEmptyCopiesAndMergeOfEmptyIsNoop) {
  Summary later = Summarize({{7, 1, 2.0}});
  Summary s;
  s.Merge(later);
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.first_step, 7);
  EXPECT_EQ(s.first, 2.0);
  s.Merge(Summary{});
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.last_step, 7);
  EXPECT_EQ(s.max, 2.0);
}

}  // namespace
}  // namespace trainwatch::storage
