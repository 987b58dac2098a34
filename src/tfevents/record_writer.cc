#include "tfevents/record_writer.h"

#include <cstdint>
#include <cstring>

#include "tfevents/masked_crc.h"

namespace trainwatch::tfevents {

void AppendRecord(std::string_view data, std::string* out) {
  const uint64_t length = data.size();
  char header[12];
  std::memcpy(header, &length, 8);  // little-endian host
  const uint32_t length_crc = MaskedCrc(header, 8);
  std::memcpy(header + 8, &length_crc, 4);
  out->append(header, sizeof header);
  out->append(data);
  const uint32_t data_crc = MaskedCrc(data.data(), data.size());
  out->append(reinterpret_cast<const char*>(&data_crc), 4);
}

}  // namespace trainwatch::tfevents
