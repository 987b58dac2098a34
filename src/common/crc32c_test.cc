#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

namespace trainwatch::crc32c {
namespace {

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Value("123456789"), 0xE3069283u);
  EXPECT_EQ(Value(""), 0u);

  // RFC 3720, appendix B.4.
  char buf[32];
  std::memset(buf, 0, sizeof(buf));
  EXPECT_EQ(Value(buf, sizeof(buf)), 0x8A9136AAu);
  std::memset(buf, 0xff, sizeof(buf));
  EXPECT_EQ(Value(buf, sizeof(buf)), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<char>(i);
  EXPECT_EQ(Value(buf, sizeof(buf)), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<char>(31 - i);
  EXPECT_EQ(Value(buf, sizeof(buf)), 0x113FDB5Cu);
}

TEST(Crc32cTest, PortableMatchesKnownVectors) {
  EXPECT_EQ(detail::ExtendPortable(0, "123456789", 9), 0xE3069283u);
  char zeros[32] = {};
  EXPECT_EQ(detail::ExtendPortable(0, zeros, sizeof(zeros)), 0x8A9136AAu);
}

TEST(Crc32cTest, ExtendInPiecesEqualsWhole) {
  const std::string data = "hello, trainwatch: a write-ahead log needs checksums";
  const uint32_t whole = Value(data);
  for (size_t split = 0; split <= data.size(); ++split) {
    uint32_t crc = Extend(0, data.data(), split);
    crc = Extend(crc, data.data() + split, data.size() - split);
    EXPECT_EQ(crc, whole) << "split at " << split;
  }
}

TEST(Crc32cTest, HardwareMatchesPortableOnRandomData) {
  if (!detail::UsesHardware()) GTEST_SKIP() << "no SSE4.2 on this CPU: Extend is the portable code";
  std::mt19937_64 rng(42);
  std::string data(1 << 16, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  // Every length up to 64 and unaligned starts exercise the 8-byte loop and the byte tail.
  for (size_t start = 0; start < 8; ++start) {
    for (size_t n = 0; n <= 64; ++n) {
      ASSERT_EQ(Extend(0, data.data() + start, n),
                detail::ExtendPortable(0, data.data() + start, n))
          << "start " << start << " length " << n;
    }
  }
  for (int round = 0; round < 200; ++round) {
    size_t start = rng() % 1024;
    size_t n = rng() % (data.size() - start);
    uint32_t seed = static_cast<uint32_t>(rng());
    ASSERT_EQ(Extend(seed, data.data() + start, n),
              detail::ExtendPortable(seed, data.data() + start, n));
  }
}

}  // namespace
}  // namespace trainwatch::crc32c
