#include "storage/downsample.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace trainwatch::storage {
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

}  // namespace
}  // namespace trainwatch::storage

namespace trainwatch::storage {
namespace {

// Folding whole blocks gives exactly what scanning every point gives (sum aside: its order differs).
TEST(DownsamplerTest, BlocksAgreeWithScanningEveryPoint) {
  std::vector<Point> points;
  for (int i = 0; i < 1000; ++i) {
    double v = std::sin(i * 0.37) * 100;
    if (i % 97 == 0) v = std::numeric_limits<double>::quiet_NaN();
    if (i == 500) v = std::numeric_limits<double>::infinity();
    if (i == 333) v = -1e300;
    points.push_back(Point{i, 0, v});
  }
  std::vector<BlockSummary> blocks = SummarizeBlocks(points);
  ASSERT_EQ(blocks.size(), (1000 + kBlockPoints - 1) / kBlockPoints);
  for (auto [a, b] : {std::pair<int, int>{0, 1000}, {1, 999}, {31, 33}, {32, 64}, {5, 700}, {480, 520},
                      {330, 340}, {999, 1000}}) {
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

}  // namespace
}  // namespace trainwatch::storage
