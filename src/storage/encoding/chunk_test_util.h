// Test data shared by the chunk codec tests: workload-like series and hand-built chunks.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "storage/encoding/chunk_codec.h"
#include "storage/encoding/varint.h"

namespace trainwatch::storage::chunk_testing {

inline constexpr int64_t kT0Micros = int64_t{1767225600} * 1000000;
inline constexpr int64_t kMinStep = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kMaxStep = std::numeric_limits<int64_t>::max();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline double FromBits(uint64_t bits) { return std::bit_cast<double>(bits); }
inline uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }

// Times as the workload has them: start + step * 0.25 s + jitter, whole microseconds.
inline double TimeAt(int64_t step, int64_t jitter_us) {
  return static_cast<double>(kT0Micros + step * 250000 + jitter_us) / 1e6;
}

inline std::vector<Point> MakeSeries(size_t n, int64_t step_every, uint64_t seed,
                                     double (*value)(size_t i, std::mt19937_64& rng)) {
  std::mt19937_64 rng(seed);
  std::vector<Point> points(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t step = static_cast<int64_t>(i) * step_every;
    points[i] = Point{step, TimeAt(step, static_cast<int64_t>(rng() % 20000)), value(i, rng)};
  }
  return points;
}

inline double NoisyLoss(size_t i, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0, 0.02);
  return static_cast<float>((2 + 8 * std::exp(-static_cast<double>(i) / 300)) * (1 + noise(rng)));
}
inline double CosineLr(size_t i, std::mt19937_64&) {
  return 3e-5 + 0.5 * 2.7e-4 * (1 + std::cos(M_PI * static_cast<double>(i) / 3000));
}
inline double Utilisation(size_t, std::mt19937_64& rng) {
  return static_cast<double>(95 + rng() % 6);
}
inline double GpuUtilisation(size_t i, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0, 2);
  return i % 100 < 3 ? static_cast<double>(rng() % 30)
                     : std::min(100.0, std::round(97 + noise(rng)));
}
inline double WeightNorm(size_t i, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0, 1e-3);
  return static_cast<float>(180 * (1 + 0.3 * static_cast<double>(i) / 3000) + noise(rng));
}
inline double WarmupLr(size_t i, std::mt19937_64&) { return 1e-6 * static_cast<double>(i + 1); }
inline double RandomFloat32(size_t, std::mt19937_64& rng) {
  return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(rng())));
}
inline double Counter(size_t i, std::mt19937_64&) { return 1000.0 * static_cast<double>(i); }
inline double Piecewise(size_t i, std::mt19937_64&) {
  return static_cast<double>(int64_t{61} * (1 << 30) + static_cast<int64_t>(i / 400) * (1 << 20)) /
         (1 << 30);
}
inline double Constant(size_t, std::mt19937_64&) { return 0.125; }
inline double RandomBits(size_t, std::mt19937_64& rng) { return FromBits(rng()); }

// A chunk with the given header fields and payloads (lengths filled in).
inline std::string Header(uint64_t count, uint8_t step_tag, uint8_t time_tag, uint8_t value_tag,
                          std::vector<std::string> payloads) {
  std::string out(1, static_cast<char>(kChunkFormatVersion));
  char buf[encoding::kMaxVarint64Bytes];
  out.append(buf, encoding::EncodeVarint64(buf, count) - buf);
  out += static_cast<char>(step_tag);
  out += static_cast<char>(time_tag);
  out += static_cast<char>(value_tag);
  for (const std::string& p : payloads)
    out.append(buf, encoding::EncodeVarint64(buf, p.size()) - buf);
  for (const std::string& p : payloads) out += p;
  return out;
}

}  // namespace trainwatch::storage::chunk_testing
