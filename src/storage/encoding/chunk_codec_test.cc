#include "storage/encoding/chunk_codec.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "storage/encoding/chunk_test_util.h"

namespace trainwatch::storage::chunk_testing {
namespace {

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
      FromBits(0x7FF8000000000000ull),
      -0.0,
      0.0,
      kInf,
      -kInf,
      FromBits(1),                      // smallest denormal
      FromBits(0x800FFFFFFFFFFFFFull),  // largest negative denormal
      std::numeric_limits<double>::max(),
      std::numeric_limits<double>::lowest(),
      1.0 / 3};
  std::vector<Point> points;
  for (size_t i = 0; i < specials.size(); ++i) {
    points.push_back(
        Point{static_cast<int64_t>(i), TimeAt(static_cast<int64_t>(i), 0), specials[i]});
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
  EXPECT_EQ(DecodeChunk(encoded.substr(0, encoded.size() - 1), &out).code(),
            StatusCode::kCorruption);
  EXPECT_EQ(out.size(), 11u);
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

}  // namespace
}  // namespace trainwatch::storage::chunk_testing
