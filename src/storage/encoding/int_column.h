// Int columns: a run of int64 values stored as order-r differences (r = 0 plain, 1 delta,
// 2 delta-of-delta), packed either as zigzag varints or frame-of-reference fixed-width bits.
// Used for steps, for decimal-scaled doubles (times in microseconds, integer values) and for the
// bit patterns of smooth floats. Byte layout: docs/format/chunk.md, "Int column".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "storage/encoding/column_encoding.h"

namespace trainwatch::storage::encoding {

// The two best raw payloads for one column of values. Either may be empty: not worth offering.
struct IntCandidates {
  std::string bitpacked;  // the smallest bit-packed layout (never gains from zstd)
  std::string varint;     // the smallest varint layout (worth offering to zstd)
};

// Encodes `values` (non-empty) into its candidate payloads.
IntCandidates EncodeIntColumn(std::span<const int64_t> values);

// Encodes `values` (non-empty) and offers both candidates to *picker as `encoding`, each payload
// preceded by `prefix` (the varint one also with zstd).
void OfferIntColumn(std::span<const int64_t> values, ColumnEncoding encoding,
                    std::string_view prefix, CandidatePicker* picker);

// Decodes an int column payload of exactly `count` values into out[0, count). Corruption, naming
// the first inconsistency, unless `payload` is exactly one well-formed int column of `count`.
Status DecodeIntColumn(std::string_view payload, uint32_t count, int64_t* out);

// The layout of a payload, e.g. "dod.bitpack"; "?" if its first byte is not a valid layout byte.
std::string DescribeIntColumn(std::string_view payload);

}  // namespace trainwatch::storage::encoding
