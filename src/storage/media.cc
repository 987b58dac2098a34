#include "storage/media.h"

#include "storage/binary_io.h"

namespace trainwatch::storage {
namespace {

constexpr uint8_t kEntryVersion = 1;
constexpr size_t kEntryHeaderBytes = 1 + 8;  // version, time

}  // namespace

std::string EncodeImageEntry(const ImageEntry& e) {
  std::string out(1, static_cast<char>(kEntryVersion));
  PutDouble(&out, e.time);
  out += e.sha256;
  out.push_back(static_cast<char>(e.format));
  PutFixed32(&out, e.width);
  PutFixed32(&out, e.height);
  PutFixed64(&out, e.size);
  PutLengthPrefixed(&out, e.caption);
  return out;
}

bool DecodeImageEntry(std::string_view data, ImageEntry* e) {
  ByteReader in(data);
  uint8_t version = 0, format = 0;
  if (!in.GetByte(&version) || version != kEntryVersion || !in.GetDouble(&e->time)) return false;
  e->sha256.resize(kSha256Bytes);
  for (char& c : e->sha256) {
    uint8_t byte;
    if (!in.GetByte(&byte)) return false;
    c = static_cast<char>(byte);
  }
  if (!in.GetByte(&format) || format > static_cast<uint8_t>(ImageFormat::kWebp)) return false;
  e->format = static_cast<ImageFormat>(format);
  return in.GetFixed32(&e->width) && in.GetFixed32(&e->height) && in.GetFixed64(&e->size) &&
         in.GetLengthPrefixed(&e->caption) && in.empty();
}

std::string EncodeTextEntry(const TextEntry& e) {
  std::string out(1, static_cast<char>(kEntryVersion));
  PutDouble(&out, e.time);
  out += e.value;
  return out;
}

bool DecodeTextEntry(std::string_view data, TextEntry* e) {
  Result<double> time = DecodeMediaEntryTime(data);
  if (!time.ok()) return false;
  e->time = *time;
  e->value.assign(data.substr(kEntryHeaderBytes));
  return true;
}

Result<double> DecodeMediaEntryTime(std::string_view data) {
  ByteReader in(data.substr(0, kEntryHeaderBytes));
  uint8_t version = 0;
  double time = 0;
  if (!in.GetByte(&version) || version != kEntryVersion || !in.GetDouble(&time)) {
    return Status::Corruption("bad entry value");
  }
  return time;
}

}  // namespace trainwatch::storage
