// Decoding arbitrary bytes: random, truncated and mutated chunks must yield Corruption (or, for a
// mutation that stays well-formed, OK), never a crash or an out-of-bounds read. Run under
// -fsanitize=address,undefined to check the latter.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "storage/encoding/chunk_codec.h"
#include "storage/encoding/chunk_test_util.h"
#include "storage/encoding/zstd_frame.h"

namespace trainwatch::storage::chunk_testing {
namespace {
// A spread of valid chunks: every column encoding, zstd and not.
std::vector<std::string> Corpus() {
  std::vector<std::string> corpus;
  for (auto* value : {NoisyLoss, CosineLr, WarmupLr, Utilisation, GpuUtilisation, WeightNorm,
                      Counter, Piecewise, Constant, RandomBits, RandomFloat32}) {
    for (size_t n : {1, 3, 64, 700}) {
      const std::vector<Point> points = MakeSeries(n, 3, n, value);
      corpus.push_back(*EncodeChunk(points));
      corpus.push_back(*EncodeChunk(points, {.times_absent = true}));
    }
  }
  // Split planes in zstd frames, hand-built: the shapes above rarely pick them at this size.
  const std::string steps_0_to_63("\x05\x00\x02\x00", 4);  // delta bit-packed: 0, then +1
  for (const auto& [tag, width] : {std::pair{0x84, 4}, std::pair{0x87, 8}}) {
    std::string planes(64 * width, '\0');
    for (size_t i = 0; i < planes.size(); ++i) planes[i] = static_cast<char>(i * i % 7);
    std::string frame;
    EXPECT_TRUE(encoding::ZstdCompress(planes, 1, &frame));
    corpus.push_back(Header(64, 1, 0, tag, {steps_0_to_63, "", frame}));
  }
  return corpus;
}

// An InspectChunk name without parameters: "decimal6.delta.varint+zstd" -> "decimal+zstd".
std::string BaseName(const std::string& name) {
  const bool zstd = name.ends_with("+zstd");
  std::string base = name.substr(0, zstd ? name.size() - 5 : name.size());
  base =
      base.substr(0, base.find('.', base.starts_with("f32.") || base.starts_with("f64.") ? 4 : 0));
  if (base.starts_with("decimal")) base = "decimal";
  return base + (zstd ? "+zstd" : "");
}

TEST(ChunkCodecFuzz, CorpusCoversEveryEncoding) {
  std::set<std::string> names;
  for (const std::string& chunk : Corpus()) {
    Result<ChunkStats> stats = InspectChunk(chunk);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    for (const std::string* name :
         {&stats->step_encoding, &stats->time_encoding, &stats->value_encoding}) {
      names.insert(BaseName(*name));
    }
  }
  for (const char* want :
       {"absent", "int", "const", "decimal", "decimal+zstd", "f32.split", "f32.split+zstd",
        "f32.gorilla", "f32.bits", "f32.bits+zstd", "f64.split", "f64.split+zstd", "f64.gorilla",
        "f64.bits", "f64.bits+zstd"}) {
    EXPECT_TRUE(names.count(want)) << want;
  }
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
    std::vector<Point> whole;
    ASSERT_TRUE(DecodeChunk(chunk, &whole).ok());
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
    const auto tag = [&] {
      return static_cast<uint8_t>((rng() % 10) | (rng() % 4 == 0 ? 0x80 : 0));
    };
    const uint8_t step_tag = rng() % 2 ? 1 : tag();
    ExpectGraceful(Header(1 + rng() % 20, step_tag, tag(), tag(), payloads));
  }
}

}  // namespace
}  // namespace trainwatch::storage::chunk_testing
