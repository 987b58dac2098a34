#include "storage/encoding/gorilla.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

namespace trainwatch::storage::encoding {
namespace {

template <typename T>
std::string RoundTrip(const std::vector<T>& patterns) {
  std::string payload;
  std::vector<T> decoded(patterns.size());
  Status s;
  if constexpr (sizeof(T) == 4) {
    payload = GorillaEncode32(patterns);
    s = GorillaDecode32(payload, static_cast<uint32_t>(patterns.size()), decoded.data());
  } else {
    payload = GorillaEncode64(patterns);
    s = GorillaDecode64(payload, static_cast<uint32_t>(patterns.size()), decoded.data());
  }
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(decoded, patterns);
  return payload;
}

TEST(Gorilla, RepeatedValuesCostOneBitEach) {
  const std::string payload = RoundTrip(std::vector<uint64_t>(800, 0x3FF0000000000000ull));
  EXPECT_EQ(payload.size(), 8u + 100u);  // 64 bits, then 799 zero bits
}

TEST(Gorilla, RoundTripsRandomAndStructuredPatterns) {
  std::mt19937_64 rng(5);
  for (size_t n : {1, 2, 3, 17, 1000}) {
    std::vector<uint64_t> p64(n);
    std::vector<uint32_t> p32(n);
    for (size_t i = 0; i < n; ++i) {
      p64[i] = rng();
      p32[i] = static_cast<uint32_t>(rng());
    }
    RoundTrip(p64);
    RoundTrip(p32);
    for (size_t i = 0; i < n; ++i) {
      p64[i] = std::bit_cast<uint64_t>(std::sin(0.01 * static_cast<double>(i)));
      p32[i] = std::bit_cast<uint32_t>(static_cast<float>(100 + (i % 7)));
    }
    RoundTrip(p64);
    RoundTrip(p32);
  }
  RoundTrip(std::vector<uint64_t>{0, UINT64_MAX, 0, 1, uint64_t{1} << 63, 0});
  RoundTrip(std::vector<uint32_t>{0, UINT32_MAX, 0, 1, uint32_t{1} << 31, 0});
}

TEST(Gorilla, RejectsMalformedPayloads) {
  std::vector<uint64_t> out(4);
  EXPECT_EQ(GorillaDecode64("", 1, out.data()).code(), StatusCode::kCorruption);
  EXPECT_EQ(GorillaDecode64(std::string(7, '\0'), 1, out.data()).code(), StatusCode::kCorruption);
  EXPECT_TRUE(GorillaDecode64(std::string(8, '\0'), 1, out.data()).ok());
  EXPECT_EQ(GorillaDecode64(std::string(9, '\0'), 1, out.data()).code(), StatusCode::kCorruption);
  // Control bits 1, 0 (reuse the window) before any window was set.
  EXPECT_EQ(GorillaDecode64(std::string(8, '\0') + "\x01", 2, out.data()).code(),
            StatusCode::kCorruption);
  // New window with leading zeros 63 and length 64.
  std::string bad = std::string(8, '\0') + "\xff\xff\x3f";
  EXPECT_EQ(GorillaDecode64(bad, 2, out.data()).code(), StatusCode::kCorruption);
  const std::string good = GorillaEncode64(std::vector<uint64_t>{1, 2, 3, 4});
  for (size_t len = 0; len < good.size(); ++len) {
    EXPECT_FALSE(GorillaDecode64(good.substr(0, len), 4, out.data()).ok()) << len;
  }
}

}  // namespace
}  // namespace trainwatch::storage::encoding
