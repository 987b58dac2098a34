#include "storage/encoding/bit_stream.h"

#include <cstring>

namespace trainwatch::storage::encoding {

void BitWriter::WriteSlow(uint64_t value, int width) {
  const int room = 64 - pending_bits_;  // 1..64, and width >= room
  pending_ |= room == 64 ? value : value << pending_bits_;
  char buf[8];
  std::memcpy(buf, &pending_, 8);  // little-endian host (checked in chunk_codec.cc)
  bytes_.append(buf, 8);
  pending_bits_ = width - room;
  pending_ = pending_bits_ == 0 ? 0 : value >> room;
}

std::string BitWriter::Finish() {
  char buf[8];
  std::memcpy(buf, &pending_, 8);
  bytes_.append(buf, (pending_bits_ + 7) / 8);
  pending_ = 0;
  pending_bits_ = 0;
  std::string out;
  out.swap(bytes_);
  return out;
}

uint64_t BitReader::Load64(size_t index) const {
  uint64_t v = 0;
  if (index + 8 <= data_.size()) {
    std::memcpy(&v, data_.data() + index, 8);  // little-endian host (checked in chunk_codec.cc)
    return v;
  }
  for (size_t i = index; i < data_.size(); ++i) {
    v |= uint64_t{static_cast<unsigned char>(data_[i])} << (8 * (i - index));
  }
  return v;
}

bool BitReader::Read(int width, uint64_t* value) {
  if (width == 0) {
    *value = 0;
    return true;
  }
  if (static_cast<size_t>(width) > total_bits_ - position_) return false;
  const size_t index = position_ / 8;
  const int shift = static_cast<int>(position_ % 8);
  uint64_t v = Load64(index) >> shift;
  if (shift + width > 64) {  // the field reaches into a ninth byte, which exists (checked above)
    v |= uint64_t{static_cast<unsigned char>(data_[index + 8])} << (64 - shift);
  }
  if (width < 64) v &= (uint64_t{1} << width) - 1;
  *value = v;
  position_ += width;
  return true;
}

bool BitReader::AtPaddedEnd() const {
  const size_t left = total_bits_ - position_;
  if (left >= 8) return false;
  if (left == 0) return true;
  const auto last = static_cast<unsigned char>(data_.back());
  return (last >> (8 - left)) == 0;
}

}  // namespace trainwatch::storage::encoding
