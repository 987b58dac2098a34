#include "storage/encoding/varint.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace trainwatch::storage::encoding {
namespace {

TEST(ZigZag, MapsSmallMagnitudesToSmallCodes) {
  EXPECT_EQ(ZigZagEncode(0), 0u);
  EXPECT_EQ(ZigZagEncode(-1), 1u);
  EXPECT_EQ(ZigZagEncode(1), 2u);
  EXPECT_EQ(ZigZagEncode(-2), 3u);
  EXPECT_EQ(ZigZagEncode(std::numeric_limits<int64_t>::max()), UINT64_MAX - 1);
  EXPECT_EQ(ZigZagEncode(std::numeric_limits<int64_t>::min()), UINT64_MAX);
}

TEST(ZigZag, RoundTripsExtremes) {
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, std::numeric_limits<int64_t>::max(),
                    std::numeric_limits<int64_t>::min(), int64_t{123456789}, int64_t{-987654321}}) {
    EXPECT_EQ(ZigZagDecode(ZigZagEncode(v)), v);
  }
}

TEST(Varint, RoundTripsAndReportsLength) {
  std::vector<uint64_t> values = {0, 1, 127, 128, 16383, 16384, UINT64_MAX, uint64_t{1} << 63};
  for (int shift = 0; shift < 64; ++shift) values.push_back((uint64_t{1} << shift) - 1);
  for (uint64_t v : values) {
    char buf[kMaxVarint64Bytes];
    char* end = EncodeVarint64(buf, v);
    EXPECT_EQ(static_cast<size_t>(end - buf), VarintLength(v)) << v;
    uint64_t decoded = 0;
    EXPECT_EQ(DecodeVarint64(buf, end, &decoded), end);
    EXPECT_EQ(decoded, v);
  }
}

TEST(Varint, RejectsTruncatedInput) {
  char buf[kMaxVarint64Bytes];
  char* end = EncodeVarint64(buf, UINT64_MAX);
  uint64_t v;
  for (char* limit = buf; limit < end; ++limit) EXPECT_EQ(DecodeVarint64(buf, limit, &v), nullptr);
}

TEST(Varint, RejectsValuesBeyond64Bits) {
  std::string too_long(10, '\xff');
  too_long += '\x01';
  uint64_t v;
  EXPECT_EQ(DecodeVarint64(too_long.data(), too_long.data() + too_long.size(), &v), nullptr);
  std::string overflow(9, '\xff');
  overflow += '\x02';  // the tenth byte may only carry bit 63
  EXPECT_EQ(DecodeVarint64(overflow.data(), overflow.data() + overflow.size(), &v), nullptr);
}

}  // namespace
}  // namespace trainwatch::storage::encoding
