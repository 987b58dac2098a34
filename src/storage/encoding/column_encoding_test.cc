#include "storage/encoding/column_encoding.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace trainwatch::storage::encoding {
namespace {

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(EntropyBytes, MeasuresOrderZeroEntropyPerPlane) {
  EXPECT_EQ(EntropyBytes(std::string(1000, 'a'), 1), 0u);
  EXPECT_EQ(EntropyBytes(std::string(500, 'a') + std::string(500, 'b'), 1), 125u);  // 1 bit each
  EXPECT_EQ(EntropyBytes(std::string(500, 'a') + std::string(500, 'b'), 2), 0u);    // two runs
  const size_t random = EntropyBytes(RandomBytes(4096, 1), 1);
  EXPECT_GT(random, 4096u * 95 / 100);
  EXPECT_LE(random, 4096u);
}

TEST(CandidatePicker, KeepsTheSmallest) {
  CandidatePicker picker(1);
  EXPECT_EQ(picker.best_size(), SIZE_MAX);
  picker.Offer(ColumnEncoding::kFloat64Gorilla, std::string(30, 'x'));
  picker.Offer(ColumnEncoding::kFloat64Split, std::string(40, 'y'));
  picker.Offer(ColumnEncoding::kFloat64Bits, "");  // ignored
  EXPECT_EQ(picker.best_size(), 30u);
  picker.Offer(ColumnEncoding::kConstant, std::string(8, 'z'));
  EncodedColumn best = picker.Take();
  EXPECT_EQ(best.encoding, ColumnEncoding::kConstant);
  EXPECT_FALSE(best.zstd);
  EXPECT_EQ(best.tag(), 2);
}

TEST(CandidatePicker, UsesZstdOnlyWhenItWins) {
  CandidatePicker compressible(1);
  compressible.OfferWithZstd(ColumnEncoding::kFloat64Split, std::string(4096, '\0'), 8);
  EncodedColumn best = compressible.Take();
  EXPECT_TRUE(best.zstd);
  EXPECT_LT(best.payload.size(), 64u);
  EXPECT_EQ(best.tag(), 0x87);

  CandidatePicker random(1);
  random.OfferWithZstd(ColumnEncoding::kFloat64Split, RandomBytes(4096, 2), 8);
  best = random.Take();
  EXPECT_FALSE(best.zstd);
  EXPECT_EQ(best.payload.size(), 4096u);
}

TEST(CandidatePicker, SkipsZstdWhenEntropyCannotBeatTheBest) {
  CandidatePicker picker(1);
  picker.Offer(ColumnEncoding::kFloat64Gorilla, std::string(100, 'g'));
  picker.OfferWithZstd(ColumnEncoding::kFloat64Split, RandomBytes(4096, 3), 8);
  EXPECT_EQ(picker.Take().encoding, ColumnEncoding::kFloat64Gorilla);
}

TEST(ColumnEncoding, NamesAndKinds) {
  EXPECT_EQ(ColumnEncodingName(ColumnEncoding::kDecimal), "decimal");
  EXPECT_TRUE(IsFloatEncoding(ColumnEncoding::kFloat32Bits));
  EXPECT_FALSE(IsFloatEncoding(ColumnEncoding::kInt64));
  EXPECT_FALSE(IsFloatEncoding(ColumnEncoding::kAbsent));
  EXPECT_FALSE(IsFloatEncoding(static_cast<ColumnEncoding>(10)));
}

}  // namespace
}  // namespace trainwatch::storage::encoding
