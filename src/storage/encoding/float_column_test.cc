#include "storage/encoding/float_column.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "storage/encoding/float_bits.h"
#include "storage/encoding/zstd_frame.h"

namespace trainwatch::storage::encoding {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double FromBits(uint64_t bits) { return std::bit_cast<double>(bits); }
uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }

// Encodes, decodes, checks bit-exactness and returns the chosen encoding's description.
std::string RoundTrip(const std::vector<double>& values, size_t* bytes = nullptr) {
  EncodedColumn column = EncodeFloatColumn(values, 1);
  std::string raw = column.payload;
  if (column.zstd) {
    Status s = ZstdDecompress(column.payload, 64 + 11 * values.size(), &raw);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  std::vector<double> decoded(values.size(), 12345.0);
  Status s =
      DecodeFloatColumn(column.encoding, raw, static_cast<uint32_t>(values.size()), decoded.data());
  EXPECT_TRUE(s.ok()) << s.ToString();
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(Bits(decoded[i]), Bits(values[i])) << "value " << i << " = " << values[i];
  }
  if (bytes != nullptr) *bytes = column.payload.size();
  return DescribeFloatColumn(column.encoding, raw) + (column.zstd ? "+zstd" : "");
}

TEST(FloatBits, Float32PatternsAreExactIncludingNaNPayloads) {
  uint32_t p = 0;
  EXPECT_TRUE(DoubleToFloat32Pattern(0.5, &p));
  EXPECT_TRUE(DoubleToFloat32Pattern(-0.0, &p));
  EXPECT_EQ(p, 0x80000000u);
  EXPECT_TRUE(DoubleToFloat32Pattern(kInf, &p));
  EXPECT_TRUE(DoubleToFloat32Pattern(-kInf, &p));
  EXPECT_TRUE(DoubleToFloat32Pattern(static_cast<double>(1e-40f), &p));  // float32 denormal
  EXPECT_FALSE(DoubleToFloat32Pattern(0.1, &p));
  EXPECT_FALSE(DoubleToFloat32Pattern(1e39, &p));    // beyond float32 range
  EXPECT_FALSE(DoubleToFloat32Pattern(5e-324, &p));  // double denormal
  // A NaN whose payload fits in 23 bits (signalling ones included) maps exactly.
  for (uint64_t bits : {0x7FF8000000000000ull, 0xFFF8000000000000ull, 0x7FF0000020000000ull,
                        0x7FFFFFFFE0000000ull}) {
    ASSERT_TRUE(DoubleToFloat32Pattern(FromBits(bits), &p)) << std::hex << bits;
    EXPECT_EQ(Bits(Float32PatternToDouble(p)), bits) << std::hex << bits;
  }
  EXPECT_FALSE(DoubleToFloat32Pattern(FromBits(0x7FF8000000000001ull), &p));
}

TEST(FloatBits, DecimalsAreExactOrRefused) {
  int64_t m = 0;
  EXPECT_TRUE(DoubleToDecimal(1767225600.123456, 6, &m));
  EXPECT_EQ(m, 1767225600123456);
  EXPECT_FALSE(DoubleToDecimal(1767225600.123456, 5, &m));
  EXPECT_TRUE(DoubleToDecimal(-9223372036854775808.0, 0, &m));
  EXPECT_EQ(m, std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(DoubleToDecimal(9223372036854775808.0, 0, &m));
  EXPECT_FALSE(DoubleToDecimal(-0.0, 0, &m));
  EXPECT_FALSE(DoubleToDecimal(kInf, 0, &m));
  EXPECT_FALSE(DoubleToDecimal(std::nan(""), 0, &m));
  EXPECT_FALSE(DoubleToDecimal(0.5, 0, &m));
  EXPECT_TRUE(DoubleToDecimal(0.5, 1, &m));
}

TEST(FloatColumn, ConstantColumnCostsOneDouble) {
  size_t bytes = 0;
  EXPECT_EQ(RoundTrip(std::vector<double>(1024, 3e-4), &bytes), "const");
  EXPECT_EQ(bytes, 8u);
  EXPECT_EQ(RoundTrip(std::vector<double>(10, FromBits(0x7FF4000000000123ull))), "const");
}

TEST(FloatColumn, IntegersUseDecimalZero) {
  std::mt19937_64 rng(1);
  std::vector<double> util(1024);
  for (double& v : util) v = static_cast<double>(90 + rng() % 11);
  size_t bytes = 0;
  EXPECT_EQ(RoundTrip(util, &bytes).substr(0, 9), "decimal0.");
  EXPECT_LE(bytes, 1024u * 9 / 16);  // at most 4.5 bits per value (log2(11) = 3.46)

  std::vector<double> counter(1024);
  for (size_t i = 0; i < counter.size(); ++i) counter[i] = 1e12 + 512.0 * static_cast<double>(i);
  EXPECT_EQ(RoundTrip(counter, &bytes), "decimal0.delta.bitpack");
  EXPECT_LT(bytes, 16u);
  RoundTrip({9223372036854774784.0, -9223372036854775808.0, 0, 1, -1});
}

TEST(FloatColumn, MicrosecondTimesUseDecimalSix) {
  std::mt19937_64 rng(2);
  std::vector<double> times(1024);
  for (size_t i = 0; i < times.size(); ++i) {
    const int64_t us = int64_t{1767225600000000} + static_cast<int64_t>(i) * 250000 +
                       static_cast<int64_t>(rng() % 30000);
    times[i] = DecimalToDouble(us, 6);
  }
  size_t bytes = 0;
  EXPECT_EQ(RoundTrip(times, &bytes).substr(0, 9), "decimal6.");
  EXPECT_LT(bytes, 1024u * 18 / 8);
}

TEST(FloatColumn, NoisyFloat32StaysFloat32) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 0.02);
  std::vector<double> loss(1024);
  for (size_t i = 0; i < loss.size(); ++i) {
    loss[i] =
        static_cast<float>(2.0 + 8.0 * std::exp(-static_cast<double>(i) / 300) * (1 + noise(rng)));
  }
  size_t bytes = 0;
  EXPECT_EQ(RoundTrip(loss, &bytes).substr(0, 4), "f32.");
  EXPECT_LT(bytes, 1024u * 4);
}

TEST(FloatColumn, SmoothFloat64BeatsRawSize) {
  std::vector<double> lr(1024);
  for (size_t i = 0; i < lr.size(); ++i) {
    lr[i] = 3e-5 + 0.5 * 2.7e-4 * (1 + std::cos(M_PI * static_cast<double>(i) / 5000));
  }
  size_t bytes = 0;
  EXPECT_EQ(RoundTrip(lr, &bytes).substr(0, 4), "f64.");
  EXPECT_LT(bytes, 1024u * 6);
}

TEST(FloatColumn, PiecewiseConstantIsNearlyFree) {
  std::vector<double> mem(1024);
  for (size_t i = 0; i < mem.size(); ++i) mem[i] = 61.7 + 0.25 * static_cast<double>(i / 300);
  size_t bytes = 0;
  RoundTrip(mem, &bytes);
  EXPECT_LT(bytes, 64u);
}

TEST(FloatColumn, SpecialValuesRoundTripBitExactly) {
  const double nan_payload = FromBits(0x7FF0000000000001ull);  // signalling, low payload bit
  const double qnan_neg = FromBits(0xFFF8000000ABCDEFull);
  const double denormal = FromBits(1);
  const double max_denormal = FromBits(0x000FFFFFFFFFFFFFull);
  EXPECT_EQ(RoundTrip({0.0, -0.0, 1.0, -1.0}).substr(0, 4), "f32.");
  EXPECT_EQ(RoundTrip({kInf, -kInf, 2.5, std::nanf("")}).substr(0, 4), "f32.");
  EXPECT_EQ(RoundTrip({1.0, FromBits(0x7FF0000020000000ull)}).substr(0, 4), "f32.");
  EXPECT_EQ(RoundTrip({1.0, nan_payload, qnan_neg, -0.0}).substr(0, 4), "f64.");
  EXPECT_EQ(RoundTrip({denormal, max_denormal, -denormal, 0.0}).substr(0, 4), "f64.");
  RoundTrip({std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
             std::numeric_limits<double>::min(), std::numeric_limits<double>::epsilon()});
  RoundTrip({42.0});
  RoundTrip({-0.0});
}

TEST(FloatColumn, RandomBitPatternsRoundTrip) {
  std::mt19937_64 rng(4);
  for (size_t n : {1, 2, 5, 100, 2000}) {
    std::vector<double> values(n);
    for (double& v : values) v = FromBits(rng());
    RoundTrip(values);
    for (double& v : values)
      v = static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(rng())));
    RoundTrip(values);  // float32 NaNs widen with a 23-bit payload and stay float32
  }
}

TEST(FloatColumn, RejectsMalformedPayloads) {
  std::vector<double> out(4);
  EXPECT_EQ(DecodeFloatColumn(ColumnEncoding::kConstant, "1234567", 4, out.data()).code(),
            StatusCode::kCorruption);
  EXPECT_EQ(
      DecodeFloatColumn(ColumnEncoding::kFloat64Split, std::string(31, 'x'), 4, out.data()).code(),
      StatusCode::kCorruption);
  EXPECT_EQ(
      DecodeFloatColumn(ColumnEncoding::kFloat32Split, std::string(17, 'x'), 4, out.data()).code(),
      StatusCode::kCorruption);
  EXPECT_EQ(DecodeFloatColumn(ColumnEncoding::kDecimal, "", 4, out.data()).code(),
            StatusCode::kCorruption);
  EXPECT_EQ(
      DecodeFloatColumn(ColumnEncoding::kDecimal, std::string("\x0a\x04\x00\x00", 4), 4, out.data())
          .code(),
      StatusCode::kCorruption);  // 10 digits
  // A float32-bits int column holding a value above 2^32 - 1.
  EXPECT_EQ(DecodeFloatColumn(ColumnEncoding::kFloat32Bits,
                              std::string("\x00\x80\x80\x80\x80\x20", 6), 1, out.data())
                .code(),
            StatusCode::kCorruption);
  EXPECT_EQ(DecodeFloatColumn(ColumnEncoding::kInt64, std::string(8, '\0'), 1, out.data()).code(),
            StatusCode::kCorruption);
  EXPECT_EQ(DecodeFloatColumn(static_cast<ColumnEncoding>(77), "", 1, out.data()).code(),
            StatusCode::kCorruption);
}

}  // namespace
}  // namespace trainwatch::storage::encoding
