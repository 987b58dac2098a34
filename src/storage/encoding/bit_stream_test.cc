#include "storage/encoding/bit_stream.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

namespace trainwatch::storage::encoding {
namespace {

TEST(BitStream, RoundTripsFieldsOfEveryWidth) {
  std::mt19937_64 rng(7);
  std::vector<std::pair<uint64_t, int>> fields;
  for (int i = 0; i < 5000; ++i) {
    const int width = static_cast<int>(rng() % 65);
    const uint64_t mask = width == 64 ? UINT64_MAX : (uint64_t{1} << width) - 1;
    fields.emplace_back(rng() & mask, width);
  }
  BitWriter writer;
  for (auto [value, width] : fields) writer.Write(value, width);
  const std::string bytes = writer.Finish();
  BitReader reader(bytes);
  for (auto [value, width] : fields) {
    uint64_t got = 0;
    ASSERT_TRUE(reader.Read(width, &got));
    ASSERT_EQ(got, value) << "width " << width;
  }
  EXPECT_TRUE(reader.AtPaddedEnd());
}

TEST(BitStream, PacksLeastSignificantBitFirst) {
  BitWriter writer;
  writer.Write(1, 1);
  writer.Write(0, 1);
  writer.Write(0b101, 3);
  const std::string bytes = writer.Finish();
  ASSERT_EQ(bytes.size(), 1u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0b10101);
}

TEST(BitStream, IgnoresBitsAboveTheWidth) {
  BitWriter writer;
  writer.Write(0xFF, 4);
  EXPECT_EQ(writer.Finish(), std::string(1, '\x0f'));
}

TEST(BitStream, RefusesToReadPastTheEnd) {
  const std::string bytes = "\xAB\xCD";
  BitReader reader(bytes);
  uint64_t v = 0;
  EXPECT_FALSE(reader.Read(17, &v));
  ASSERT_TRUE(reader.Read(12, &v));
  EXPECT_EQ(v, 0xDABu);
  EXPECT_FALSE(reader.Read(5, &v));
  EXPECT_FALSE(reader.AtPaddedEnd());  // the 4 bits left are 1100, not padding
  ASSERT_TRUE(reader.Read(4, &v));
  EXPECT_EQ(v, 0xCu);
  EXPECT_TRUE(reader.AtPaddedEnd());
  EXPECT_FALSE(reader.Read(1, &v));
}

TEST(BitStream, PaddedEndNeedsZeroBitsAndLessThanAByte) {
  BitReader reader(std::string_view("\x01\x00", 2));
  uint64_t v = 0;
  EXPECT_FALSE(reader.AtPaddedEnd());
  ASSERT_TRUE(reader.Read(1, &v));
  EXPECT_FALSE(reader.AtPaddedEnd());  // 15 bits left
  ASSERT_TRUE(reader.Read(8, &v));
  EXPECT_TRUE(reader.AtPaddedEnd());
}

}  // namespace
}  // namespace trainwatch::storage::encoding
