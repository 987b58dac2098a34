#include "storage/encoding/chunk_codec.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "storage/encoding/varint.h"

namespace trainwatch::storage {
namespace {

constexpr int64_t kT0Micros = int64_t{1767225600} * 1000000;
constexpr int64_t kMinStep = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxStep = std::numeric_limits<int64_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();

double FromBits(uint64_t bits) { return std::bit_cast<double>(bits); }
uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }

// Times as the workload has them: start + step * 0.25 s + jitter, whole microseconds.
double TimeAt(int64_t step, int64_t jitter_us) {
  return static_cast<double>(kT0Micros + step * 250000 + jitter_us) / 1e6;
}

std::vector<Point> MakeSeries(size_t n, int64_t step_every, uint64_t seed,
                              double (*value)(size_t i, std::mt19937_64& rng)) {
  std::mt19937_64 rng(seed);
  std::vector<Point> points(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t step = static_cast<int64_t>(i) * step_every;
    points[i] = Point{step, TimeAt(step, static_cast<int64_t>(rng() % 20000)), value(i, rng)};
  }
  return points;
}

double NoisyLoss(size_t i, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0, 0.02);
  return static_cast<float>((2 + 8 * std::exp(-static_cast<double>(i) / 300)) * (1 + noise(rng)));
}
double CosineLr(size_t i, std::mt19937_64&) {
  return 3e-5 + 0.5 * 2.7e-4 * (1 + std::cos(M_PI * static_cast<double>(i) / 3000));
}
double Utilisation(size_t, std::mt19937_64& rng) { return static_cast<double>(95 + rng() % 6); }
double Counter(size_t i, std::mt19937_64&) { return 1000.0 * static_cast<double>(i); }
double Piecewise(size_t i, std::mt19937_64&) {
  return static_cast<double>(int64_t{61} * (1 << 30) + static_cast<int64_t>(i / 400) * (1 << 20)) /
         (1 << 30);
}
double Constant(size_t, std::mt19937_64&) { return 0.125; }
double RandomBits(size_t, std::mt19937_64& rng) { return FromBits(rng()); }

void ExpectBitExact(const std::vector<Point>& got, const std::vector<Point>& want,
                    bool times_absent = false) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].step, want[i].step) << i;
    ASSERT_EQ(Bits(got[i].time), Bits(times_absent ? 0.0 : want[i].time)) << i;
    ASSERT_EQ(Bits(got[i].value), Bits(want[i].value)) << i << " " << want[i].value;
  }
}

// Encodes, decodes, checks bit-exactness and returns the chunk's stats.
ChunkStats RoundTrip(const std::vector<Point>& points, EncodeOptions options = {}) {
  Result<std::string> encoded = EncodeChunk(points, options);
  EXPECT_TRUE(encoded.ok()) << encoded.status().ToString();
  if (!encoded.ok()) return {};
  std::vector<Point> decoded;
  Status s = DecodeChunk(*encoded, &decoded);
  EXPECT_TRUE(s.ok()) << s.ToString();
  ExpectBitExact(decoded, points, options.times_absent);
  Result<ChunkStats> stats = InspectChunk(*encoded);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (!stats.ok()) return {};
  EXPECT_EQ(stats->count, points.size());
  EXPECT_EQ(stats->total_bytes, encoded->size());
  EXPECT_LT(stats->step_bytes + stats->time_bytes + stats->value_bytes, stats->total_bytes);
  return *stats;
}

TEST(ChunkCodec, RegularStepsAndMicrosecondTimes) {
  const ChunkStats stats = RoundTrip(MakeSeries(1024, 1, 1, NoisyLoss));
  EXPECT_EQ(stats.step_encoding, "int.delta.bitpack");
  EXPECT_LE(stats.step_bytes, 8u);
  EXPECT_EQ(stats.time_encoding.substr(0, 9), "decimal6.");
  EXPECT_LT(stats.time_bytes, 1024u * 17 / 8);  // jitter spans 40000 us: 16 bits per delta
  EXPECT_EQ(stats.value_encoding.substr(0, 4), "f32.");
}

TEST(ChunkCodec, EveryShapeRoundTripsBitExactly) {
  struct Shape {
    const char* name;
    double (*value)(size_t, std::mt19937_64&);
    const char* encoding_prefix;
    size_t max_value_bytes;  // for 1024 points
  };
  const Shape shapes[] = {
      {"noisy float32", NoisyLoss, "f32.", 1024 * 3},
      {"cosine lr", CosineLr, "f64.", 1024 * 6},
      {"utilisation", Utilisation, "decimal0.", 1024 * 3 / 8 + 8},
      {"counter", Counter, "decimal0.", 16},
      {"piecewise constant", Piecewise, "", 64},
      {"constant", Constant, "const", 8},
      {"random bits", RandomBits, "f64.", 1024 * 8},
  };
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(shape.name);
    for (int64_t every : {1, 10, 1000}) {
      const ChunkStats stats = RoundTrip(MakeSeries(1024, every, 9, shape.value));
      EXPECT_EQ(stats.value_encoding.substr(0, std::string(shape.encoding_prefix).size()),
                shape.encoding_prefix);
      EXPECT_LE(stats.value_bytes, shape.max_value_bytes) << stats.value_encoding;
      EXPECT_LE(stats.step_bytes, 8u);
    }
  }
}

TEST(ChunkCodec, SpecialValuesRoundTrip) {
  const std::vector<double> specials = {
      FromBits(0x7FF0000000000001ull),  // signalling NaN, lowest payload bit
      FromBits(0xFFF8DEADBEEF0001ull),  // negative quiet NaN with a payload
      FromBits(0x7FF8000000000000ull), -0.0, 0.0, kInf, -kInf,
      FromBits(1),                      // smallest denormal
      FromBits(0x800FFFFFFFFFFFFFull),  // largest negative denormal
      std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(), 1.0 / 3};
  std::vector<Point> points;
  for (size_t i = 0; i < specials.size(); ++i) {
    points.push_back(Point{static_cast<int64_t>(i), TimeAt(static_cast<int64_t>(i), 0), specials[i]});
  }
  RoundTrip(points);
  // Times with the same oddities (they cannot be microseconds, so they take the float path).
  for (size_t i = 0; i < points.size(); ++i) points[i].time = specials[specials.size() - 1 - i];
  const ChunkStats stats = RoundTrip(points);
  EXPECT_EQ(stats.time_encoding.substr(0, 4), "f64.");
}

TEST(ChunkCodec, Float32NaNsStayFloat32OnlyWhenExact) {
  std::vector<Point> points = MakeSeries(100, 1, 2, NoisyLoss);
  points[50].value = std::nanf("");
  points[60].value = FromBits(0xFFF0000020000000ull);  // signalling, payload fits in 23 bits
  EXPECT_EQ(RoundTrip(points).value_encoding.substr(0, 4), "f32.");
  points[70].value = FromBits(0x7FF8000000000001ull);
  EXPECT_EQ(RoundTrip(points).value_encoding.substr(0, 4), "f64.");
}

TEST(ChunkCodec, StepExtremesGapsAndNegatives) {
  RoundTrip({{kMinStep, 1, 1}, {-1, 2, 2}, {0, 3, 3}, {kMaxStep, 4, 4}});
  RoundTrip({{kMinStep, 1, 1}, {kMaxStep, 2, 2}});
  RoundTrip({{kMinStep, 1, 1}, {kMinStep + 1, 2, 2}, {kMaxStep - 1, 3, 3}, {kMaxStep, 4, 4}});
  RoundTrip({{-1000000, 0, 0}, {-999999, 0, 0}, {-5, 0, 0}, {1LL << 62, 0, 0}});
  std::vector<Point> gaps;
  std::mt19937_64 rng(6);
  int64_t step = -(int64_t{1} << 61);
  for (int i = 0; i < 500; ++i) {
    gaps.push_back({step, TimeAt(i, 0), static_cast<double>(i)});
    step += 1 + static_cast<int64_t>(rng() % (uint64_t{1} << (rng() % 50)));
  }
  RoundTrip(gaps);
}

TEST(ChunkCodec, SinglePointChunks) {
  for (const Point& p : std::vector<Point>{{0, 0, 0},
                                           {kMinStep, -0.0, -0.0},
                                           {kMaxStep, kInf, std::nan("")},
                                           {7, 1767225600.25, 2.5},
                                           {-3, 1e300, FromBits(0x7FF0000000000001ull)}}) {
    const ChunkStats stats = RoundTrip({p});
    EXPECT_LE(stats.total_bytes, 40u);
    RoundTrip({p}, {.times_absent = true});
  }
}

TEST(ChunkCodec, TimesAbsent) {
  const std::vector<Point> points = MakeSeries(300, 5, 3, Utilisation);
  const ChunkStats stats = RoundTrip(points, {.times_absent = true});
  EXPECT_EQ(stats.time_encoding, "absent");
  EXPECT_EQ(stats.time_bytes, 0u);
}

TEST(ChunkCodec, EncodingIsDeterministicAndHonoursTheLevel) {
  const std::vector<Point> points = MakeSeries(1024, 1, 4, NoisyLoss);
  EXPECT_EQ(*EncodeChunk(points), *EncodeChunk(points));
  RoundTrip(points, {.zstd_level = 9});
  RoundTrip(points, {.zstd_level = -5});
}

TEST(ChunkCodec, RejectsInvalidInput) {
  EXPECT_EQ(EncodeChunk({}).status().code(), StatusCode::kInvalidArgument);
  const std::vector<Point> dup = {{1, 0, 0}, {1, 0, 0}};
  EXPECT_EQ(EncodeChunk(dup).status().code(), StatusCode::kInvalidArgument);
  const std::vector<Point> down = {{2, 0, 0}, {1, 0, 0}};
  EXPECT_EQ(EncodeChunk(down).status().code(), StatusCode::kInvalidArgument);
  std::vector<Point> many(kMaxChunkPoints + 1);
  for (size_t i = 0; i < many.size(); ++i) many[i].step = static_cast<int64_t>(i);
  EXPECT_EQ(EncodeChunk(many).status().code(), StatusCode::kInvalidArgument);
  many.pop_back();
  RoundTrip(many);
  EXPECT_EQ(EncodeChunk(dup, {.zstd_level = 1000}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ChunkCodec, DecodeAppendsAndLeavesOutputAloneOnFailure) {
  const std::vector<Point> a = MakeSeries(10, 1, 5, Counter);
  const std::string encoded = *EncodeChunk(a);
  std::vector<Point> out = {{-5, 1, 1}};
  ASSERT_TRUE(DecodeChunk(encoded, &out).ok());
  ASSERT_EQ(out.size(), 11u);
  EXPECT_EQ(out[0].step, -5);
  EXPECT_EQ(out[10].step, a[9].step);
  EXPECT_EQ(DecodeChunk(encoded.substr(0, encoded.size() - 1), &out).code(), StatusCode::kCorruption);
  EXPECT_EQ(out.size(), 11u);
}

std::string Header(uint64_t count, uint8_t step_tag, uint8_t time_tag, uint8_t value_tag,
                   std::vector<std::string> payloads) {
  std::string out(1, static_cast<char>(kChunkFormatVersion));
  char buf[encoding::kMaxVarint64Bytes];
  out.append(buf, encoding::EncodeVarint64(buf, count) - buf);
  out += static_cast<char>(step_tag);
  out += static_cast<char>(time_tag);
  out += static_cast<char>(value_tag);
  for (const std::string& p : payloads) out.append(buf, encoding::EncodeVarint64(buf, p.size()) - buf);
  for (const std::string& p : payloads) out += p;
  return out;
}

TEST(ChunkCodec, ReportsPreciseCorruption) {
  std::vector<Point> out;
  const std::string step1("\x04\x02\x00", 3);  // one step, bit-packed plain: reference 1, width 0
  const std::string value8(8, '\0');
  ASSERT_TRUE(DecodeChunk(Header(1, 1, 0, 2, {step1, "", value8}), &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].step, 1);
  struct Case {
    std::string bytes;
    const char* reason;
  };
  const Case cases[] = {
      {"", "empty chunk"},
      {"\x02", "unknown chunk format version 2"},
      {Header(0, 1, 0, 2, {step1, "", value8}), "point count 0"},
      {Header(kMaxChunkPoints + 1, 1, 0, 2, {step1, "", value8}), "point count 65537"},
      {Header(1, 2, 0, 2, {value8, "", value8}), "step column: encoding tag 2 not allowed"},
      {Header(1, 1, 0, 0, {step1, "", ""}), "value column: encoding tag 0 not allowed"},
      {Header(1, 1, 0, 42, {step1, "", value8}), "value column: encoding tag 42 not allowed"},
      {Header(1, 1, 0, 2, {step1, "x", value8}), "time column: absent column has a payload"},
      {Header(1, 1, 0, 2, {step1, "", "1234567"}), "value column: const: payload is 7 bytes"},
      {Header(1, 1, 0, 0x82, {step1, "", value8}), "value column: not a zstd frame"},
      {Header(2, 1, 0, 2, {std::string("\x04\x02\x00\x00", 4), "", value8}),
       "step column: int column: bit-packed body"},
      {Header(1, 1, 0, 2, {step1, "", value8}) + "z", "1 bytes after the last column"},
  };
  for (const Case& c : cases) {
    Status s = DecodeChunk(c.bytes, &out);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << c.reason;
    EXPECT_NE(s.message().find(c.reason), std::string::npos) << s.message();
    EXPECT_EQ(InspectChunk(c.bytes).status().code(), StatusCode::kCorruption) << c.reason;
  }
  // Strictly increasing steps are checked after decoding: plain varints 4, 4.
  Status s = DecodeChunk(Header(2, 1, 0, 2, {std::string("\x00\x08\x08", 3), "", value8}), &out);
  EXPECT_NE(s.message().find("steps not increasing at point 1"), std::string::npos) << s.ToString();
}

// A spread of valid chunks: every column encoding, zstd and not.
std::vector<std::string> Corpus() {
  std::vector<std::string> corpus;
  for (auto* value : {NoisyLoss, CosineLr, Utilisation, Counter, Piecewise, Constant, RandomBits}) {
    for (size_t n : {1, 3, 64, 700}) {
      const std::vector<Point> points = MakeSeries(n, 3, n, value);
      corpus.push_back(*EncodeChunk(points));
      corpus.push_back(*EncodeChunk(points, {.times_absent = true}));
    }
  }
  return corpus;
}

// Decodes arbitrary bytes; only OK or Corruption are acceptable, with *out untouched on failure.
void ExpectGraceful(std::string_view bytes) {
  std::vector<Point> out = {{1, 2, 3}};
  Status s = DecodeChunk(bytes, &out);
  ASSERT_TRUE(s.ok() || s.code() == StatusCode::kCorruption) << s.ToString();
  if (!s.ok()) {
    ASSERT_EQ(out.size(), 1u);
  }
  Result<ChunkStats> stats = InspectChunk(bytes);
  ASSERT_EQ(stats.ok(), s.ok()) << stats.status().ToString();
  if (s.ok()) {
    ASSERT_EQ(out.size(), 1 + stats->count);
  }
}

TEST(ChunkCodecFuzz, EveryTruncationIsCorruption) {
  for (const std::string& chunk : Corpus()) {
    ASSERT_TRUE(DecodeChunk(chunk, std::make_unique<std::vector<Point>>().get()).ok());
    for (size_t len = 0; len < chunk.size(); ++len) {
      std::vector<Point> out;
      // A heap copy of exactly `len` bytes, so that sanitizers catch any over-read.
      const std::string prefix = chunk.substr(0, len);
      ASSERT_EQ(DecodeChunk(prefix, &out).code(), StatusCode::kCorruption) << len;
      ASSERT_TRUE(out.empty());
    }
  }
}

TEST(ChunkCodecFuzz, BitFlipsAndByteMutationsNeverCrash) {
  std::mt19937_64 rng(99);
  for (const std::string& chunk : Corpus()) {
    for (int i = 0; i < 300; ++i) {
      std::string mutated = chunk;
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        const size_t at = rng() % mutated.size();
        if (rng() % 2) {
          mutated[at] = static_cast<char>(mutated[at] ^ (1 << (rng() % 8)));
        } else {
          mutated[at] = static_cast<char>(rng());
        }
      }
      ExpectGraceful(mutated);
    }
  }
}

TEST(ChunkCodecFuzz, RandomBytesNeverCrash) {
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    if (!bytes.empty() && rng() % 2) bytes[0] = static_cast<char>(kChunkFormatVersion);
    ExpectGraceful(bytes);
  }
}

TEST(ChunkCodecFuzz, ValidHeadersWithRandomPayloadsNeverCrash) {
  std::mt19937_64 rng(4321);
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::string> payloads(3);
    for (std::string& p : payloads) {
      p.resize(rng() % 24);
      for (char& c : p) c = static_cast<char>(rng() % 4 == 0 ? 0 : rng());
    }
    const auto tag = [&] { return static_cast<uint8_t>((rng() % 10) | (rng() % 4 == 0 ? 0x80 : 0)); };
    const uint8_t step_tag = rng() % 2 ? 1 : tag();
    ExpectGraceful(Header(1 + rng() % 20, step_tag, tag(), tag(), payloads));
  }
}

}  // namespace
}  // namespace trainwatch::storage
