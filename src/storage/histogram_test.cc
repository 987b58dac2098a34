#include "storage/histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace trainwatch::storage {
namespace {

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

void ExpectRoundTrip(const Histogram& h) {
  std::string encoded = EncodeHistogram(h);
  Histogram back;
  ASSERT_TRUE(DecodeHistogram(encoded, h.step, &back).ok());
  EXPECT_EQ(back.step, h.step);
  EXPECT_EQ(Bits(back.time), Bits(h.time));
  ASSERT_EQ(back.edges.size(), h.edges.size());
  ASSERT_EQ(back.counts.size(), h.counts.size());
  for (size_t i = 0; i < h.edges.size(); ++i) EXPECT_EQ(Bits(back.edges[i]), Bits(h.edges[i])) << i;
  for (size_t i = 0; i < h.counts.size(); ++i)
    EXPECT_EQ(Bits(back.counts[i]), Bits(h.counts[i])) << i;
  Result<double> time = DecodeHistogramTime(encoded);
  ASSERT_TRUE(time.ok());
  EXPECT_EQ(Bits(*time), Bits(h.time));
}

TEST(HistogramCodec, RoundTripsBitExact) {
  ExpectRoundTrip({7, 1767225600.25, {-1.0, 0.0, 1.0}, {3, 4}});  // integer counts: varints
  ExpectRoundTrip({0, 0.5, {-0.0, 1e-310, 2.5}, {0.25, 1e300}});  // fractional counts: doubles
  ExpectRoundTrip({1, 1.0, {0.0, 1.0}, {-0.0}});                  // -0 is not a varint
  ExpectRoundTrip({2, 1.0, {0.0, 1.0, 2.0}, {9007199254740992.0, 1.0}});  // 2^53: doubles
}

TEST(HistogramCodec, LargeRegularHistogramsCompress) {
  Histogram h;
  h.step = 123456789;
  h.time = 1767225600;
  for (int i = 0; i <= 1000; ++i) h.edges.push_back(-5.0 + i * 0.01);
  for (int i = 0; i < 1000; ++i)
    h.counts.push_back(std::floor(1000 * std::exp(-(i - 500) * (i - 500) / 20000.0)));
  ExpectRoundTrip(h);
  EXPECT_LT(EncodeHistogram(h).size(), 8 * h.edges.size() + 8 * h.counts.size());
  Histogram max;
  for (size_t i = 0; i <= kMaxHistogramBuckets; ++i)
    max.edges.push_back(static_cast<double>(i) * 0.37);
  for (size_t i = 0; i < kMaxHistogramBuckets; ++i)
    max.counts.push_back(static_cast<double>(i % 7) / 3);
  ExpectRoundTrip(max);
}

TEST(HistogramCodec, RefusesDamagedValues) {
  std::string good = EncodeHistogram({1, 2.0, {0.0, 1.0, 2.0}, {1.0, 2.0}});
  Histogram out;
  EXPECT_FALSE(DecodeHistogram("", 1, &out).ok());
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(DecodeHistogram(good.substr(0, n), 1, &out).ok()) << "truncated at " << n;
  }
  EXPECT_FALSE(DecodeHistogram(good + "x", 1, &out).ok());
  std::string version = good;
  version[0] = 2;
  EXPECT_FALSE(DecodeHistogram(version, 1, &out).ok());
  EXPECT_FALSE(DecodeHistogramTime(version).ok());
  std::string flags = good;
  flags[1] = static_cast<char>(0x80);
  EXPECT_FALSE(DecodeHistogram(flags, 1, &out).ok());
  std::string zero_buckets = good.substr(0, 10) + std::string(1, '\0');
  EXPECT_FALSE(DecodeHistogram(zero_buckets, 1, &out).ok());
}

}  // namespace
}  // namespace trainwatch::storage
