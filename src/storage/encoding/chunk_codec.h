// The sealed-chunk codec: encodes the points of one series into a compact, self-describing byte
// string and back, losslessly (every double bit-for-bit, NaN payloads, -0.0 and ±Inf included).
// Each column (steps, times, values) gets the smallest encoding for its shape; the choice is
// recorded in the chunk, so decoding needs no options. Byte layout: docs/format/chunk.md.
//
// All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "storage/encoding/point.h"

namespace trainwatch::storage {

// The format version written in byte 0 of every chunk; DecodeChunk accepts only this one.
inline constexpr uint8_t kChunkFormatVersion = 1;
// The most points one chunk may hold (bounds what decoding arbitrary bytes may allocate).
inline constexpr uint32_t kMaxChunkPoints = 1u << 16;

struct EncodeOptions {
  // The caller keeps the times elsewhere (e.g. one time column per run): none are stored, and
  // DecodeChunk yields time = 0.
  bool times_absent = false;
  // zstd level for the columns that use it; low levels keep sealing fast.
  int zstd_level = 1;
};

// Encodes `points`, which must be non-empty, at most kMaxChunkPoints long and in strictly
// increasing step order. InvalidArgument (naming the offending index) otherwise, or for a zstd
// level zstd does not accept.
Result<std::string> EncodeChunk(std::span<const Point> points, const EncodeOptions& options = {});

// Appends the points of the chunk `encoded` to *out. On a malformed chunk returns Corruption with
// the column and reason, leaves *out unchanged, and never reads outside `encoded`.
Status DecodeChunk(std::string_view encoded, std::vector<Point>* out);

// What one encoded chunk holds, for benchmarks and diagnostics.
struct ChunkStats {
  uint32_t count = 0;
  // Encoding names with their parameters, e.g. "int.dod.bitpack", "decimal6.delta.bitpack",
  // "f32.split+zstd", "absent"; a "+zstd" suffix means the payload is a zstd frame.
  std::string step_encoding, time_encoding, value_encoding;
  size_t step_bytes = 0, time_bytes = 0, value_bytes = 0;  // payload bytes of each column
  size_t total_bytes = 0;                                  // the whole chunk, header included
};

// Describes `encoded` after checking it the way DecodeChunk does (same Corruption results).
Result<ChunkStats> InspectChunk(std::string_view encoded);

}  // namespace trainwatch::storage
