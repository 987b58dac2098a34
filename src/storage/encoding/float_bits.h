// Exact (bit-for-bit) conversions between doubles and the narrower forms the chunk format stores
// them in: float32 patterns and decimal-scaled integers. Every function here is deterministic and
// independent of the FPU's NaN handling, so encoder and decoder agree on every platform.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace trainwatch::storage::encoding {

inline constexpr int kMaxDecimalDigits = 9;
inline constexpr double kPow10[kMaxDecimalDigits + 1] = {1e0, 1e1, 1e2, 1e3, 1e4,
                                                         1e5, 1e6, 1e7, 1e8, 1e9};

// The double a float32 pattern stands for. A NaN keeps its sign and its 23 payload bits, placed at
// the top of the double's 52 (signalling NaNs stay signalling).
inline double Float32PatternToDouble(uint32_t u) {
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0) {
    const uint64_t bits = (uint64_t{u & 0x80000000u} << 32) | 0x7FF0000000000000ull |
                          (uint64_t{u & 0x007FFFFFu} << 29);
    return std::bit_cast<double>(bits);
  }
  return static_cast<double>(std::bit_cast<float>(u));
}

// The float32 pattern of `v` if Float32PatternToDouble gives `v` back bit-for-bit; false otherwise.
inline bool DoubleToFloat32Pattern(double v, uint32_t* out) {
  const auto bits = std::bit_cast<uint64_t>(v);
  if (std::isnan(v)) {
    if ((bits & ((uint64_t{1} << 29) - 1)) != 0) return false;  // payload needs more than 23 bits
    *out = static_cast<uint32_t>((bits >> 32) & 0x80000000u) | 0x7F800000u |
           static_cast<uint32_t>((bits >> 29) & 0x007FFFFFu);
    return true;
  }
  if (std::fabs(v) > std::numeric_limits<float>::max() && !std::isinf(v)) return false;
  const auto f = static_cast<float>(v);
  if (std::bit_cast<uint64_t>(static_cast<double>(f)) != bits) return false;
  *out = std::bit_cast<uint32_t>(f);
  return true;
}

// The double a decimal-scaled integer stands for: m / 10^digits, correctly rounded.
inline double DecimalToDouble(int64_t m, int digits) {
  return static_cast<double>(m) / kPow10[digits];
}

// The m with DecimalToDouble(m, digits) == v bit-for-bit, if there is one (never for NaN, ±Inf or
// -0.0); false otherwise.
inline bool DoubleToDecimal(double v, int digits, int64_t* m) {
  const double scaled = v * kPow10[digits];
  // [-2^63, 2^63): llround is exact and in range for every double in here.
  if (!(scaled >= -9223372036854775808.0 && scaled < 9223372036854775808.0)) return false;
  const int64_t candidate = std::llround(scaled);
  if (std::bit_cast<uint64_t>(DecimalToDouble(candidate, digits)) != std::bit_cast<uint64_t>(v)) {
    return false;
  }
  *m = candidate;
  return true;
}

}  // namespace trainwatch::storage::encoding
