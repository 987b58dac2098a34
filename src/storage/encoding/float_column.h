// Columns of doubles (a chunk's times or values): picks the smallest lossless encoding for the
// data's shape and decodes every float encoding. Layouts: docs/format/chunk.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "storage/encoding/column_encoding.h"

namespace trainwatch::storage::encoding {

// Encodes `values` (non-empty) with the smallest of the encodings that apply, in this order of
// preference: constant; decimal-scaled integers (the fewest digits d in 0..9 that represent every
// value exactly); float32 patterns (split+zstd, Gorilla, or int column of the patterns) when every
// value is exactly a float32; float64 patterns (the same three) otherwise.
EncodedColumn EncodeFloatColumn(std::span<const double> values, int zstd_level);

// Decodes the raw (already decompressed) payload of a float encoding into out[0, count).
// Corruption, with the reason, unless `raw` is exactly one well-formed payload of `count` values.
Status DecodeFloatColumn(ColumnEncoding encoding, std::string_view raw, uint32_t count,
                         double* out);

// The encoding with its parameters, e.g. "decimal6.delta.bitpack" or "f32.split".
std::string DescribeFloatColumn(ColumnEncoding encoding, std::string_view raw);

}  // namespace trainwatch::storage::encoding
