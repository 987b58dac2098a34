// The column tag of a sealed chunk and the picker that keeps the smallest candidate encoding.
//
// A tag byte names a column's encoding: bits 0-6 are a ColumnEncoding, bit 7 says the payload is a
// zstd frame whose content is the encoding's raw payload. Layouts: docs/format/chunk.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace trainwatch::storage::encoding {

// Part of the on-disk format: values are never renumbered or reused.
enum class ColumnEncoding : uint8_t {
  kAbsent = 0,          // time column only: no payload, times decode as 0
  kInt64 = 1,           // int column of the values (step column only)
  kConstant = 2,        // one little-endian double, repeated `count` times
  kDecimal = 3,         // byte d (0..9), then an int column of m; value = double(m) / 10^d
  kFloat32Split = 4,    // float32 patterns, byte-stream split (4 planes)
  kFloat32Gorilla = 5,  // float32 patterns, Gorilla XOR
  kFloat32Bits = 6,     // int column of the float32 patterns
  kFloat64Split = 7,    // float64 patterns, byte-stream split (8 planes)
  kFloat64Gorilla = 8,  // float64 patterns, Gorilla XOR
  kFloat64Bits = 9,     // int column of the float64 patterns
};
inline constexpr uint8_t kZstdTagBit = 0x80;
inline constexpr uint8_t kMaxColumnEncoding = 9;

// "int", "const", "decimal", "f32.split", ... (without parameters).
std::string_view ColumnEncodingName(ColumnEncoding encoding);
// True for the encodings a time or value column (of doubles) may use.
bool IsFloatEncoding(ColumnEncoding encoding);

// One encoded column, ready to be framed into a chunk.
struct EncodedColumn {
  ColumnEncoding encoding = ColumnEncoding::kAbsent;
  bool zstd = false;
  std::string payload;  // the raw payload, or its zstd frame when `zstd`

  uint8_t tag() const { return static_cast<uint8_t>(encoding) | (zstd ? kZstdTagBit : 0); }
};

// Keeps the smallest of the candidates offered. Not thread-safe.
class CandidatePicker {
 public:
  explicit CandidatePicker(int zstd_level) : zstd_level_(zstd_level) {}

  // Offers `raw` as the payload of `encoding`. An empty `raw` is ignored unless `encoding` is
  // kAbsent.
  void Offer(ColumnEncoding encoding, std::string raw);
  // Offers `raw` and also its zstd frame -- unless the order-0 entropy of `raw`, taken over
  // `planes` equal slices, already exceeds the best size so far (zstd then almost never wins, and
  // skipping it keeps encoding fast). Offer the cheap candidates first.
  void OfferWithZstd(ColumnEncoding encoding, std::string raw, size_t planes = 1);
  // SIZE_MAX until something has been offered.
  size_t best_size() const { return has_best_ ? best_.payload.size() : SIZE_MAX; }
  // The smallest candidate offered; at least one must have been.
  EncodedColumn Take() { return std::move(best_); }

 private:
  int zstd_level_;
  bool has_best_ = false;
  EncodedColumn best_;
};

// The order-0 (per-byte) entropy of `bytes`, in bytes, summed over `planes` equal slices; an
// estimate of what an entropy coder can shrink them to without finding repeats.
size_t EntropyBytes(std::string_view bytes, size_t planes);

}  // namespace trainwatch::storage::encoding
