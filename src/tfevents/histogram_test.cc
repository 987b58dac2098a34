#include "tfevents/histogram.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "tfevents/event.h"
#include "tfevents/event_encoder.h"
#include "tfevents/summary.h"
#include "tfevents/wire_reader.h"

namespace trainwatch::tfevents {
namespace {

using V = std::vector<double>;

TEST(V1HistogramTest, TensorFlowLayoutDropsTheOpenEndsAndUsesMinMax) {
  // TensorFlow writes an empty open bucket below (limit just under min) and above (DBL_MAX).
  Buckets b;
  ASSERT_TRUE(ConvertV1Histogram(-0.8, 2.5, V{-1, 0, 1, 3, DBL_MAX}, V{0, 4, 5, 6, 0}, &b).ok());
  EXPECT_EQ(b.edges, (V{-0.8, 0, 1, 2.5}));
  EXPECT_EQ(b.counts, (V{4, 5, 6}));
}

TEST(V1HistogramTest, PyTorchLayoutKeepsItsEdgesExactly) {
  // torch.utils.tensorboard: bucket_limit = numpy's edges, bucket = [0, counts...], min/max = the
  // outer edges. An empty last bucket with a finite limit is kept.
  Buckets b;
  ASSERT_TRUE(ConvertV1Histogram(0.5, 4.5, V{0.5, 1.5, 2.5, 3.5, 4.5}, V{0, 1, 0, 2, 0}, &b).ok());
  EXPECT_EQ(b.edges, (V{0.5, 1.5, 2.5, 3.5, 4.5}));
  EXPECT_EQ(b.counts, (V{1, 0, 2, 0}));
}

TEST(V1HistogramTest, MinOutsideTheFirstBucketKeepsTheBucketsOwnBound) {
  Buckets b;
  ASSERT_TRUE(ConvertV1Histogram(0, 0, V{1, 2, 3}, V{0, 7, 1}, &b).ok());  // min/max not set
  EXPECT_EQ(b.edges, (V{1, 2, 3}));
  EXPECT_EQ(b.counts, (V{7, 1}));
}

TEST(V1HistogramTest, AllValuesEqualKeepsAStrictlyIncreasingBucket) {
  Buckets b;
  ASSERT_TRUE(ConvertV1Histogram(1.25, 1.25, V{1, 1.5, DBL_MAX}, V{0, 10, 0}, &b).ok());
  EXPECT_EQ(b.edges, (V{1.25, 1.5}));  // max == the lower edge: the bucket's own upper limit
  EXPECT_EQ(b.counts, (V{10}));
}

TEST(V1HistogramTest, ErrorsNameTheProblem) {
  Buckets b;
  EXPECT_EQ(ConvertV1Histogram(0, 1, V{1, 2}, V{0, 0}, &b).code(), StatusCode::kNotFound);
  EXPECT_NE(
      ConvertV1Histogram(0, 1, V{1, 1}, V{1, 1}, &b).message().find("not strictly increasing"),
      std::string::npos);
  EXPECT_NE(ConvertV1Histogram(0, 1, V{1, 2}, V{1, -1}, &b).message().find("bucket 1 has count -1"),
            std::string::npos);
  EXPECT_NE(
      ConvertV1Histogram(0, 1, V{1}, V{1, 2}, &b).message().find("bucket_limit has 1 entries"),
      std::string::npos);
  // A non-empty open bucket without a min inside it.
  EXPECT_NE(ConvertV1Histogram(NAN, NAN, V{-1e300, DBL_MAX}, V{3, 0}, &b)
                .message()
                .find("unbounded below"),
            std::string::npos);
  EXPECT_NE(
      ConvertV1Histogram(0.5, NAN, V{0, DBL_MAX}, V{0, 3}, &b).message().find("unbounded above"),
      std::string::npos);
  EXPECT_NE(ConvertV1Histogram(0, 5, V{1, 2, 3, 4, 5}, V{0, 1, 1, 1, 1}, &b, 3)
                .message()
                .find("at most 3"),
            std::string::npos);
}

TEST(V1HistogramTest, TheExportLayoutRoundTripsEvenWithEmptyOuterBuckets) {
  const V edges{-2, -0.5, 0, 1e-300, 7};
  const V counts{0, 3.5, 0, 0};
  std::string event = EncodeHistogramEvent(1.0, 3, "w", edges, counts);
  EventView ev;
  ASSERT_TRUE(DecodeEvent(event, &ev).ok());
  TagPlugins plugins;
  SummaryDecoder decoder(&plugins);
  DecodedSummary out;
  ASSERT_TRUE(decoder.Decode(ev.payload, &out).ok());
  ASSERT_EQ(out.histograms.size(), 1u);
  EXPECT_EQ(out.histograms[0].buckets.edges, edges);
  EXPECT_EQ(out.histograms[0].buckets.counts, counts);
}

TEST(V2HistogramTest, ContiguousBucketsBecomeEdgesAndCounts) {
  Buckets b;
  ASSERT_TRUE(ConvertV2Histogram(V{0, 1, 2, 1, 2, 0, 2, 3, 5}, &b).ok());
  EXPECT_EQ(b.edges, (V{0, 1, 2, 3}));
  EXPECT_EQ(b.counts, (V{2, 0, 5}));
}

TEST(V2HistogramTest, SingularBucketsFollowTensorBoardsConvention) {
  Buckets b;
  ASSERT_TRUE(ConvertV2Histogram(V{3, 3, 12}, &b).ok());  // TF 2.x v2: one zero-width bucket
  EXPECT_EQ(b.edges, (V{2.5, 3.5}));
  EXPECT_EQ(b.counts, (V{12}));
  // TF's v3: every bucket zero width at v, only the last non-empty.
  ASSERT_TRUE(ConvertV2Histogram(V{3, 3, 0, 3, 3, 0, 3, 3, 9}, &b).ok());
  EXPECT_EQ(b.edges, (V{2.5, 3.5}));
  EXPECT_EQ(b.counts, (V{9}));
}

TEST(V2HistogramTest, GapsBecomeEmptyBucketsAndOverlapsAreErrors) {
  Buckets b;
  ASSERT_TRUE(ConvertV2Histogram(V{0, 1, 1, 2, 3, 4}, &b).ok());
  EXPECT_EQ(b.edges, (V{0, 1, 2, 3}));
  EXPECT_EQ(b.counts, (V{1, 0, 4}));
  EXPECT_NE(ConvertV2Histogram(V{0, 2, 1, 1, 3, 4}, &b).message().find("overlap"),
            std::string::npos);
  EXPECT_NE(ConvertV2Histogram(V{0, 1, 1, 1, 1, 4}, &b).message().find("zero width"),
            std::string::npos);
  EXPECT_NE(ConvertV2Histogram(V{0, INFINITY, 1}, &b).message().find("edges"), std::string::npos);
  EXPECT_NE(ConvertV2Histogram(V{0, 1, NAN}, &b).message().find("count"), std::string::npos);
  EXPECT_EQ(ConvertV2Histogram(V{}, &b).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace trainwatch::tfevents
