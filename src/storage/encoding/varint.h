// Base-128 varints and zigzag mapping, the integer primitives of the chunk format
// (docs/format/chunk.md). A varint stores 7 bits per byte, least significant group first, with the
// high bit of each byte set when more bytes follow; a uint64 takes 1 to 10 bytes.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace trainwatch::storage::encoding {

inline constexpr size_t kMaxVarint64Bytes = 10;

// Maps signed to unsigned so that small magnitudes get small codes: 0,-1,1,-2,.. -> 0,1,2,3,..
inline uint64_t ZigZagEncode(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t ZigZagDecode(uint64_t u) { return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1)); }

inline size_t VarintLength(uint64_t v) {
  return (static_cast<size_t>(std::bit_width(v | 1)) + 6) / 7;
}

// Writes v at dst, which must have room for kMaxVarint64Bytes; returns the byte after the varint.
inline char* EncodeVarint64(char* dst, uint64_t v) {
  auto* p = reinterpret_cast<unsigned char*>(dst);
  while (v >= 0x80) {
    *p++ = static_cast<unsigned char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<unsigned char>(v);
  return reinterpret_cast<char*>(p);
}

// Parses one varint from [p, limit). Returns the byte after it, or nullptr when the input ends
// inside the varint or the varint does not fit in 64 bits. Never reads at or past `limit`.
inline const char* DecodeVarint64(const char* p, const char* limit, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && p < limit; shift += 7) {
    const uint64_t byte = static_cast<unsigned char>(*p++);
    if (shift == 63 && byte > 1) return nullptr;  // bits beyond 64
    result |= (byte & 0x7F) << shift;
    if (byte < 0x80) {
      *value = result;
      return p;
    }
  }
  return nullptr;
}

}  // namespace trainwatch::storage::encoding
