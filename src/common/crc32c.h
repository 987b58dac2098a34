// CRC-32C (Castagnoli), hardware-accelerated with SSE4.2 where the CPU has it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trainwatch::crc32c {

// Extends `crc` (the CRC of earlier bytes, 0 to start) over data[0, n).
uint32_t Extend(uint32_t crc, const void* data, size_t n);

inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Extend(0, s.data(), s.size()); }

namespace detail {
// The table-driven implementation Extend falls back to; exposed so tests can check the hardware
// path against it.
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);
// True when Extend uses the SSE4.2 instruction on this CPU.
bool UsesHardware();
}  // namespace detail

}  // namespace trainwatch::crc32c
