// Bit-granular writer and reader used by the bit-packed int columns and by Gorilla XOR columns.
//
// Bit order (docs/format/chunk.md): bits fill each byte from its least significant bit up, bytes in
// order; a w-bit field is written least significant bit first. The last byte is padded with zero
// bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace trainwatch::storage::encoding {

// Accumulates bits into an owned byte string. Not thread-safe.
class BitWriter {
 public:
  BitWriter() = default;
  BitWriter(const BitWriter&) = delete;
  BitWriter& operator=(const BitWriter&) = delete;

  // Reserves room for about `bits` more bits.
  void Reserve(size_t bits) { bytes_.reserve(bytes_.size() + bits / 8 + 1); }
  // Appends the low `width` bits of `value`; 0 <= width <= 64, higher bits of `value` are ignored.
  void Write(uint64_t value, int width) {
    if (width < 64) value &= (uint64_t{1} << width) - 1;
    if (width < 64 - pending_bits_) {  // fits in the accumulator with room to spare
      pending_ |= value << pending_bits_;
      pending_bits_ += width;
      return;
    }
    WriteSlow(value, width);
  }
  // Pads the last byte with zero bits and returns everything written; the writer is left empty.
  std::string Finish();

 private:
  // Fills the accumulator, flushes its 8 bytes and keeps the rest of `value`.
  void WriteSlow(uint64_t value, int width);

  std::string bytes_;
  uint64_t pending_ = 0;  // bits not yet in bytes_, least significant first
  int pending_bits_ = 0;  // < 64 between calls
};

// Reads bits from a borrowed byte string, which must outlive the reader. Never reads outside it.
class BitReader {
 public:
  explicit BitReader(std::string_view bytes) : data_(bytes), total_bits_(bytes.size() * 8) {}

  // Reads `width` bits (0 <= width <= 64) into *value. Returns false, leaving the reader unchanged,
  // when fewer than `width` bits remain.
  bool Read(int width, uint64_t* value);
  // True when fewer than 8 bits remain and all of them are zero: the writer's padding.
  bool AtPaddedEnd() const;
  size_t bits_left() const { return total_bits_ - position_; }

 private:
  // The 8 bytes starting at byte `index`, little-endian, zero beyond the end.
  uint64_t Load64(size_t index) const;

  std::string_view data_;
  size_t total_bits_;
  size_t position_ = 0;  // in bits
};

}  // namespace trainwatch::storage::encoding
