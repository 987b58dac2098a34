#include "tfevents/record_reader.h"

#include <cstring>

#include "tfevents/masked_crc.h"

namespace trainwatch::tfevents {
namespace {

uint64_t LoadLe64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // the framing is little-endian, as is every CPU we build for
  return v;
}

uint32_t LoadLe32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// True when bytes[at, at + 12) is a header whose length CRC matches and whose length is plausible.
bool ValidHeaderAt(std::string_view bytes, size_t at, uint64_t max_record_bytes) {
  const char* p = bytes.data() + at;
  return MaskedCrc(p, 8) == LoadLe32(p + 8) && LoadLe64(p) <= max_record_bytes;
}

}  // namespace

RecordResult ReadRecord(std::string_view bytes, uint64_t offset, uint64_t max_record_bytes) {
  RecordResult r;
  r.offset = offset;
  if (bytes.size() < kRecordHeaderBytes) {
    r.needed = kRecordHeaderBytes;
    return r;
  }
  const uint64_t length = LoadLe64(bytes.data());
  const bool length_crc_ok = MaskedCrc(bytes.data(), 8) == LoadLe32(bytes.data() + 8);
  if (!length_crc_ok || length > max_record_bytes) {
    // The length cannot be trusted: find the next position that starts a believable header.
    r.status = RecordStatus::kCorrupt;
    r.reason = length_crc_ok ? "record length over the limit" : "length checksum mismatch";
    size_t at = 1;
    const size_t last_start = bytes.size() - kRecordHeaderBytes;
    while (at <= last_start && !ValidHeaderAt(bytes, at, max_record_bytes)) ++at;
    r.consumed = at;  // == last_start + 1 when none was found: the last 11 bytes stay unread
    return r;
  }
  const uint64_t total = kRecordHeaderBytes + length + kRecordFooterBytes;
  if (bytes.size() < total) {
    r.needed = total;
    return r;
  }
  std::string_view data = bytes.substr(kRecordHeaderBytes, length);
  r.consumed = total;
  if (MaskedCrc(data.data(), data.size()) != LoadLe32(bytes.data() + kRecordHeaderBytes + length)) {
    r.status = RecordStatus::kCorrupt;
    r.reason = "data checksum mismatch";
    return r;
  }
  r.status = RecordStatus::kRecord;
  r.data = data;
  return r;
}

std::string DescribeCorruption(std::string_view file, const RecordResult& r) {
  std::string out(file);
  out += ":" + std::to_string(r.offset) + ": " + r.reason + " (" + std::to_string(r.consumed) +
         " bytes skipped)";
  return out;
}

}  // namespace trainwatch::tfevents
