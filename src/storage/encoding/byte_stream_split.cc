#include "storage/encoding/byte_stream_split.h"

#include <cstdint>

namespace trainwatch::storage::encoding {

std::string ByteStreamSplit(const void* values, size_t n, size_t width) {
  const auto* src = static_cast<const unsigned char*>(values);
  std::string planes(n * width, '\0');
  for (size_t k = 0; k < width; ++k) {
    char* plane = planes.data() + k * n;
    for (size_t i = 0; i < n; ++i) plane[i] = static_cast<char>(src[i * width + k]);
  }
  return planes;
}

void ByteStreamJoin(std::string_view planes, size_t n, size_t width, void* values) {
  auto* dst = static_cast<unsigned char*>(values);
  for (size_t k = 0; k < width; ++k) {
    const char* plane = planes.data() + k * n;
    for (size_t i = 0; i < n; ++i) dst[i * width + k] = static_cast<unsigned char>(plane[i]);
  }
}

}  // namespace trainwatch::storage::encoding
