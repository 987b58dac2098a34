// Decoding arbitrary bytes: random, truncated and mutated chunks must yield Corruption (or, for a
// mutation that stays well-formed, OK), never a crash or an out-of-bounds read. Run under
// -fsanitize=address,undefined to check the latter.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "storage/encoding/chunk_codec.h"
#include "storage/encoding/chunk_test_util.h"

namespace trainwatch::storage::chunk_testing {
namespace {
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
    const auto tag = [&] {
      return static_cast<uint8_t>((rng() % 10) | (rng() % 4 == 0 ? 0x80 : 0));
    };
    const uint8_t step_tag = rng() % 2 ? 1 : tag();
    ExpectGraceful(Header(1 + rng() % 20, step_tag, tag(), tag(), payloads));
  }
}

}  // namespace
}  // namespace trainwatch::storage::chunk_testing
