#include "storage/encoding/int_column.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

namespace trainwatch::storage::encoding {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Round-trips `values` through both candidates and returns the smaller payload.
std::string RoundTrip(const std::vector<int64_t>& values) {
  IntCandidates candidates = EncodeIntColumn(values);
  std::string smallest = candidates.bitpacked;
  for (const std::string* payload : {&candidates.bitpacked, &candidates.varint}) {
    if (payload->empty()) continue;
    std::vector<int64_t> decoded(values.size());
    Status s = DecodeIntColumn(*payload, static_cast<uint32_t>(values.size()), decoded.data());
    EXPECT_TRUE(s.ok()) << s.ToString() << " layout " << DescribeIntColumn(*payload);
    EXPECT_EQ(decoded, values) << DescribeIntColumn(*payload);
    if (payload->size() < smallest.size()) smallest = *payload;
  }
  return smallest;
}

TEST(IntColumn, RegularSequencesCostAFewBytes) {
  std::vector<int64_t> steps(4096);
  for (size_t i = 0; i < steps.size(); ++i) steps[i] = 1000 + 50 * static_cast<int64_t>(i);
  const std::string payload = RoundTrip(steps);
  EXPECT_LE(payload.size(), 8u);
  EXPECT_EQ(DescribeIntColumn(payload), "delta.bitpack");
}

TEST(IntColumn, ConstantSequenceIsPlainWidthZero) {
  const std::string payload = RoundTrip(std::vector<int64_t>(1000, -42));
  EXPECT_LE(payload.size(), 4u);
}

TEST(IntColumn, RoundTripsExtremesAndWrappingDifferences) {
  RoundTrip({kMin, kMax});
  RoundTrip({kMin, -1, 0, 1, kMax});
  RoundTrip({kMax, kMin, kMax, kMin, 0});
  RoundTrip({kMin});
  RoundTrip({kMax});
  RoundTrip({0});
  RoundTrip({kMin, kMin + 1, kMax - 1, kMax});
}

TEST(IntColumn, RoundTripsRandomSequencesOfEveryLength) {
  std::mt19937_64 rng(11);
  for (size_t n = 1; n < 70; ++n) {
    std::vector<int64_t> values(n);
    for (int64_t& v : values) v = static_cast<int64_t>(rng());
    RoundTrip(values);
    for (int64_t& v : values) v = static_cast<int64_t>(rng() % 100) - 50;
    RoundTrip(values);
  }
}

TEST(IntColumn, JitteredTimesPreferDeltaBitpacking) {
  std::mt19937_64 rng(3);
  std::vector<int64_t> micros(1024);
  for (size_t i = 0; i < micros.size(); ++i) {
    micros[i] = int64_t{1767225600000000} + static_cast<int64_t>(i) * 250000 +
                static_cast<int64_t>(rng() % 20000);
  }
  const std::string payload = RoundTrip(micros);
  EXPECT_EQ(DescribeIntColumn(payload), "delta.bitpack");
  EXPECT_LT(payload.size(), micros.size() * 17 / 8);  // under 17 bits per value
}

TEST(IntColumn, OutliersMakeVarintsWorthOffering) {
  std::vector<int64_t> values(1000, 5);
  values[500] = int64_t{1} << 40;
  IntCandidates candidates = EncodeIntColumn(values);
  EXPECT_FALSE(candidates.varint.empty());
  RoundTrip(values);
}

TEST(IntColumn, RejectsMalformedPayloads) {
  std::vector<int64_t> out(8);
  EXPECT_EQ(DecodeIntColumn("", 1, out.data()).code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeIntColumn("\x03\x00", 1, out.data()).code(), StatusCode::kCorruption);  // order 3
  EXPECT_EQ(DecodeIntColumn("\x08\x00", 1, out.data()).code(),
            StatusCode::kCorruption);  // stray bit
  // Varint layout: two values wanted, one present; or a byte left over.
  EXPECT_EQ(DecodeIntColumn(std::string("\x00\x02", 2), 2, out.data()).code(),
            StatusCode::kCorruption);
  EXPECT_EQ(DecodeIntColumn(std::string("\x00\x02\x04\x06", 4), 2, out.data()).code(),
            StatusCode::kCorruption);
  // Bit-packed plain layout of 8 values: reference 0, width 65.
  EXPECT_EQ(DecodeIntColumn(std::string("\x04\x00\x41", 3), 8, out.data()).code(),
            StatusCode::kCorruption);
  // Width 4 needs exactly 4 body bytes for 8 values.
  EXPECT_EQ(DecodeIntColumn(std::string("\x04\x00\x04\x11\x11\x11", 6), 8, out.data()).code(),
            StatusCode::kCorruption);
  EXPECT_TRUE(DecodeIntColumn(std::string("\x04\x00\x04\x11\x11\x11\x11", 7), 8, out.data()).ok());
  // Width 3 for 3 values leaves 7 padding bits, which must be zero.
  EXPECT_TRUE(DecodeIntColumn(std::string("\x04\x00\x03\x49\x00", 5), 3, out.data()).ok());
  EXPECT_EQ(DecodeIntColumn(std::string("\x04\x00\x03\x49\x80", 5), 3, out.data()).code(),
            StatusCode::kCorruption);
}

TEST(IntColumn, DescribesLayouts) {
  EXPECT_EQ(DescribeIntColumn(std::string("\x02", 1)), "dod.varint");
  EXPECT_EQ(DescribeIntColumn(std::string("\x04", 1)), "plain.bitpack");
  EXPECT_EQ(DescribeIntColumn(std::string("\x07", 1)), "?");
  EXPECT_EQ(DescribeIntColumn(""), "?");
}

}  // namespace
}  // namespace trainwatch::storage::encoding
