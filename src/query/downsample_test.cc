#include "query/downsample.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace trainwatch::query {
namespace {

TEST(BucketGridTest, AssignsEdgesAndTheInclusiveEnd) {
  BucketGrid grid{0, 10, 5};
  EXPECT_EQ(grid.IndexOf(0), 0);
  EXPECT_EQ(grid.IndexOf(1.999), 0);
  EXPECT_EQ(grid.IndexOf(2), 1);
  EXPECT_EQ(grid.IndexOf(10), 4);
  EXPECT_EQ(grid.IndexOf(10.0001), -1);
  EXPECT_EQ(grid.IndexOf(-0.5), -1);
  EXPECT_EQ(grid.IndexOf(std::nan("")), -1);
  BucketGrid point{3, 3, 4};
  EXPECT_EQ(point.IndexOf(3), 0);
}

TEST(DownsamplerTest, KeepsSpikesAndCountsNaNApart) {
  Downsampler d(BucketGrid{0, 9, 2}, XAxis::kStep, 0);
  for (int s = 0; s < 10; ++s) {
    double v = s == 3 ? 1e9 : (s == 7 ? std::numeric_limits<double>::quiet_NaN() : s);
    d.AddPoint(Point{s, 0, v});
  }
  std::vector<Bucket> b = d.Finish();
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].count, 5u);
  EXPECT_EQ(b[0].max, 1e9);
  EXPECT_EQ(b[0].min, 0);
  EXPECT_EQ(b[0].first, 0);
  EXPECT_EQ(b[0].last, 4);
  EXPECT_EQ(b[1].nan_count, 1u);
  EXPECT_EQ(b[1].min, 5);
  EXPECT_EQ(b[1].max, 9);
  EXPECT_EQ(b[1].sum, 5 + 6 + 8 + 9);
}

TEST(DownsamplerTest, SummaryFoldsOnlyWhenInsideOneBucket) {
  Downsampler d(BucketGrid{0, 100, 10}, XAxis::kStep, 0);
  Summary inside;
  inside.Add(Point{11, 0, 5});
  inside.Add(Point{15, 0, -3});
  EXPECT_TRUE(d.TryAddSummary(inside));
  Summary straddling;
  straddling.Add(Point{19, 0, 1});
  straddling.Add(Point{21, 0, 2});
  EXPECT_FALSE(d.TryAddSummary(straddling));
  std::vector<Bucket> b = d.Finish();
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].index, 1u);
  EXPECT_EQ(b[0].first, 5);
  EXPECT_EQ(b[0].last, -3);
}

// Folding whole blocks gives exactly what scanning every point gives (sum aside: its order
// differs).
TEST(DownsamplerTest, BlocksAgreeWithScanningEveryPoint) {
  std::vector<Point> points;
  for (int i = 0; i < 1000; ++i) {
    double v = std::sin(i * 0.37) * 100;
    if (i % 97 == 0) v = std::numeric_limits<double>::quiet_NaN();
    if (i == 500) v = std::numeric_limits<double>::infinity();
    if (i == 333) v = -1e300;
    points.push_back(Point{i, 0, v});
  }
  std::vector<BlockSummary> blocks = storage::SummarizeBlocks(points);
  ASSERT_EQ(blocks.size(), (1000 + storage::kBlockPoints - 1) / storage::kBlockPoints);
  for (auto [a, b] : {std::pair<int, int>{0, 1000},
                      {1, 999},
                      {31, 33},
                      {32, 64},
                      {5, 700},
                      {480, 520},
                      {330, 340},
                      {999, 1000}}) {
    Bucket scanned, folded;
    scanned.AddOrderedRun(&points[a], points.data() + b);
    folded.AddOrderedRun(&points[a], points.data() + b, points.data(), blocks.data());
    EXPECT_EQ(folded.count, scanned.count) << a << ".." << b;
    EXPECT_EQ(folded.nan_count, scanned.nan_count) << a << ".." << b;
    EXPECT_EQ(folded.min, scanned.min) << a << ".." << b;
    EXPECT_EQ(folded.max, scanned.max) << a << ".." << b;
    EXPECT_EQ(folded.first_step, a);
    EXPECT_EQ(folded.last_step, b - 1);
    EXPECT_NEAR(folded.sum, scanned.sum, 1e-9 * (std::abs(scanned.sum) + 1)) << a << ".." << b;
  }
}

// Merging the buckets of two halves of a series (in either order) gives the buckets of the whole:
// what a fan-out over queriers that each hold part of a series relies on.
TEST(BucketTest, MergeOfPartsEqualsTheWhole) {
  std::vector<Point> points;
  for (int i = 0; i < 200; ++i) {
    double v = std::cos(i * 0.21) * 10;
    if (i % 17 == 0) v = std::numeric_limits<double>::quiet_NaN();
    if (i == 120) v = 1e12;
    points.push_back(Point{i, 1000.0 + i, v});
  }
  const BucketGrid grid{0, 199, 7};
  Downsampler whole(grid, XAxis::kStep, 0), odd(grid, XAxis::kStep, 0), even(grid, XAxis::kStep, 0);
  for (const Point& p : points) {
    whole.AddPoint(p);
    (p.step % 2 ? odd : even).AddPoint(p);
  }
  std::vector<Bucket> want = whole.Finish(), a = odd.Finish(), b = even.Finish();
  ASSERT_EQ(a.size(), want.size());
  ASSERT_EQ(b.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    for (bool odd_first : {true, false}) {
      Bucket merged = odd_first ? a[i] : b[i];
      merged.Merge(odd_first ? b[i] : a[i]);
      EXPECT_EQ(merged.count, want[i].count);
      EXPECT_EQ(merged.nan_count, want[i].nan_count);
      EXPECT_EQ(merged.min, want[i].min);
      EXPECT_EQ(merged.max, want[i].max);
      EXPECT_EQ(merged.first_step, want[i].first_step);
      EXPECT_EQ(merged.last_step, want[i].last_step);
      EXPECT_EQ(merged.first_time, want[i].first_time);
      EXPECT_EQ(merged.last_time, want[i].last_time);
      EXPECT_TRUE(std::isnan(want[i].first) ? std::isnan(merged.first)
                                            : merged.first == want[i].first);
      EXPECT_TRUE(std::isnan(want[i].last) ? std::isnan(merged.last) : merged.last == want[i].last);
      EXPECT_NEAR(merged.sum, want[i].sum, 1e-9 * (std::abs(want[i].sum) + 1));
    }
  }
  Bucket empty;
  empty.Merge(want[0]);
  EXPECT_EQ(empty.first_step, want[0].first_step);
  EXPECT_EQ(empty.count, want[0].count);
}

// Summaries wholly off the grid need not be read; any overlap, however small, must be.
TEST(DownsamplerTest, MayOverlapOnEveryAxis) {
  Summary s;
  s.Add(Point{10, 500, 1});
  s.Add(Point{20, 510, 2});
  EXPECT_TRUE(Downsampler(BucketGrid{20, 30, 4}, XAxis::kStep, 0).MayOverlap(s));
  EXPECT_FALSE(Downsampler(BucketGrid{21, 30, 4}, XAxis::kStep, 0).MayOverlap(s));
  EXPECT_FALSE(Downsampler(BucketGrid{0, 9.5, 4}, XAxis::kStep, 0).MayOverlap(s));
  EXPECT_TRUE(Downsampler(BucketGrid{505, 505, 1}, XAxis::kWallTime, 0).MayOverlap(s));
  EXPECT_FALSE(Downsampler(BucketGrid{0, 499, 4}, XAxis::kWallTime, 0).MayOverlap(s));
  EXPECT_TRUE(Downsampler(BucketGrid{0, 5, 4}, XAxis::kRelativeTime, 505).MayOverlap(s));
  EXPECT_FALSE(Downsampler(BucketGrid{6, 49, 4}, XAxis::kRelativeTime, 450).MayOverlap(s));
}

}  // namespace
}  // namespace trainwatch::query
