// Gorilla XOR compression (Pelkonen et al., VLDB 2015) of 32- or 64-bit float patterns: each value
// is XORed with its predecessor and only the meaningful bits of the XOR are kept.
// Bit layout: docs/format/chunk.md, "Gorilla".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace trainwatch::storage::encoding {

// Encodes `patterns` (non-empty).
std::string GorillaEncode32(std::span<const uint32_t> patterns);
std::string GorillaEncode64(std::span<const uint64_t> patterns);

// Decodes exactly `count` patterns into out[0, count). Corruption unless `payload` holds exactly
// `count` well-formed values followed by zero padding bits.
Status GorillaDecode32(std::string_view payload, uint32_t count, uint32_t* out);
Status GorillaDecode64(std::string_view payload, uint32_t count, uint64_t* out);

}  // namespace trainwatch::storage::encoding
