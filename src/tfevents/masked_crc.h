// The masked CRC-32C of TFRecord framing (TensorFlow's record format, docs/tensorboard.md).
//
// A CRC stored next to the data it covers is masked so that CRCs of CRCs do not degenerate: the
// CRC is rotated right by 15 bits and a constant added.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/crc32c.h"

namespace trainwatch::tfevents {

constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;

constexpr uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta; }

constexpr uint32_t UnmaskCrc(uint32_t masked) {
  uint32_t rotated = masked - kCrcMaskDelta;
  return (rotated >> 17) | (rotated << 15);
}

// The masked CRC-32C of data[0, n) (hardware-accelerated where the CPU has SSE4.2).
inline uint32_t MaskedCrc(const void* data, size_t n) { return MaskCrc(crc32c::Value(data, n)); }

}  // namespace trainwatch::tfevents
