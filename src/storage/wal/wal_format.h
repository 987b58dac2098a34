// The on-disk format of the write-ahead log; docs/format/wal.md is the prose specification.
//
// A WAL directory holds segment files named <first_lsn as 20 zero-padded decimal digits>.wal. Each
// segment starts with a header and holds whole records with consecutive LSNs (all integers
// little-endian):
//
//   header (24 bytes):  magic "TWWALSEG" (8) | u32 version | u64 first_lsn | u32 masked crc
//                       (crc of the 20 bytes before it)
//   record (16 + n):    u32 n (payload length) | u32 masked crc of (u64 lsn, payload) |
//                       u64 lsn | payload (n bytes)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/crc32c.h"

namespace trainwatch::storage::wal {

inline constexpr std::string_view kSegmentMagic = "TWWALSEG";
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kSegmentHeaderSize = 24;
inline constexpr size_t kRecordHeaderSize = 16;
// Larger payloads are refused by the writer and treated as corruption by the reader.
inline constexpr uint32_t kMaxRecordBytes = 1u << 30;
inline constexpr std::string_view kSegmentSuffix = ".wal";
inline constexpr size_t kSegmentNameDigits = 20;

// CRC masking, as in LevelDB: the CRC of a string that itself contains CRCs (a WAL record
// carrying checksummed data, a segment copied into another file) is weak, so stored CRCs are
// rotated right by 15 bits and offset by a constant.
inline constexpr uint32_t kMaskDelta = 0xa282ead8u;
inline uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t UnmaskCrc(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

inline void PutFixed32(std::string* dst, uint32_t v) {
  char buf[4];
  for (int i = 0; i < 4; ++i) buf[i] = static_cast<char>(v >> (8 * i));
  dst->append(buf, 4);
}
inline void PutFixed64(std::string* dst, uint64_t v) {
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>(v >> (8 * i));
  dst->append(buf, 8);
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// The unmasked CRC-32C a record stores (masked): over the 8 little-endian bytes of its LSN, then
// its payload.
inline uint32_t RecordCrc(uint64_t lsn, std::string_view payload) {
  char lsn_bytes[8];
  for (int i = 0; i < 8; ++i) lsn_bytes[i] = static_cast<char>(lsn >> (8 * i));
  return crc32c::Extend(crc32c::Value(lsn_bytes, 8), payload.data(), payload.size());
}

// "00000000000000000042.wal" for 42.
inline std::string SegmentFileName(uint64_t first_lsn) {
  std::string digits = std::to_string(first_lsn);
  return std::string(kSegmentNameDigits - digits.size(), '0') + digits +
         std::string(kSegmentSuffix);
}

// The first LSN a segment file name stands for, or nullopt if `name` is not exactly 20 decimal
// digits (a value that fits in 64 bits) followed by ".wal".
inline std::optional<uint64_t> ParseSegmentFileName(std::string_view name) {
  if (name.size() != kSegmentNameDigits + kSegmentSuffix.size()) return std::nullopt;
  if (name.substr(kSegmentNameDigits) != kSegmentSuffix) return std::nullopt;
  uint64_t value = 0;
  for (size_t i = 0; i < kSegmentNameDigits; ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

}  // namespace trainwatch::storage::wal
