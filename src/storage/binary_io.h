// Little helpers to write and read fixed-width little-endian and big-endian fields.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace trainwatch::storage {

inline void PutFixed32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }
inline void PutFixed64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), 8); }
inline void PutDouble(std::string* out, double v) { out->append(reinterpret_cast<const char*>(&v), 8); }
inline void PutBigEndian64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
inline void PutBigEndian32(std::string* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
inline void PutLengthPrefixed(std::string* out, std::string_view s) {
  PutFixed32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

// Reads fields from a byte string; every Get fails (returns false) instead of over-reading.
class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}
  bool GetFixed32(uint32_t* v) { return GetRaw(v, 4); }
  bool GetFixed64(uint64_t* v) { return GetRaw(v, 8); }
  bool GetDouble(double* v) { return GetRaw(v, 8); }
  bool GetInt64(int64_t* v) { return GetRaw(v, 8); }
  bool GetByte(uint8_t* v) { return GetRaw(v, 1); }
  bool GetLengthPrefixed(std::string* s) {
    uint32_t n;
    if (!GetFixed32(&n) || data_.size() < n) return false;
    s->assign(data_.data(), n);
    data_.remove_prefix(n);
    return true;
  }
  bool empty() const { return data_.empty(); }

 private:
  bool GetRaw(void* v, size_t n) {
    if (data_.size() < n) return false;
    std::memcpy(v, data_.data(), n);
    data_.remove_prefix(n);
    return true;
  }
  std::string_view data_;
};

inline uint64_t DecodeBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
inline uint32_t DecodeBigEndian32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace trainwatch::storage
