#include "notify/outbox_format.h"

#include <cstdio>
#include <cstring>

#include "common/crc32c.h"

namespace trainwatch::notify {
namespace {

constexpr size_t kFrameBytes = 8;                      // length u32, crc u32
constexpr size_t kDeliveryFixedBytes = 1 + 8 + 8 + 2;  // type, id, enqueued_at, receiver length
constexpr size_t kAckBytes = 1 + 8 + 1;                // type, id, outcome

void PutU16(std::string* dst, uint16_t v) {
  for (int i = 0; i < 2; ++i) dst->push_back(static_cast<char>(v >> (8 * i)));
}
void PutU32(std::string* dst, uint32_t v) {
  for (int i = 0; i < 4; ++i) dst->push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string* dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst->push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t GetLE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Frames `body` (type byte first) onto dst.
void Frame(std::string_view body, std::string* dst) {
  PutU32(dst, static_cast<uint32_t>(body.size()));
  PutU32(dst, crc32c::Value(body));
  dst->append(body);
}

// Decodes the body of one record; false (with *why) when its fields do not fit.
bool DecodeBody(std::string_view body, OutboxRecord* out, std::string* why) {
  out->type = static_cast<OutboxRecordType>(body[0]);
  if (out->type == OutboxRecordType::kAck) {
    if (body.size() != kAckBytes) {
      *why = "ack record of " + std::to_string(body.size()) + " bytes";
      return false;
    }
    out->id = GetLE(body.data() + 1, 8);
    out->outcome = static_cast<AckOutcome>(body[9]);
    return true;
  }
  if (out->type != OutboxRecordType::kDelivery) {
    *why = "unknown record type " + std::to_string(static_cast<unsigned char>(body[0]));
    return false;
  }
  if (body.size() < kDeliveryFixedBytes) {
    *why = "short delivery record";
    return false;
  }
  out->id = GetLE(body.data() + 1, 8);
  uint64_t bits = GetLE(body.data() + 9, 8);
  std::memcpy(&out->enqueued_at, &bits, sizeof bits);
  size_t receiver_len = GetLE(body.data() + 17, 2);
  if (kDeliveryFixedBytes + receiver_len > body.size()) {
    *why = "receiver name overruns the record";
    return false;
  }
  out->receiver.assign(body.substr(kDeliveryFixedBytes, receiver_len));
  out->notification_json.assign(body.substr(kDeliveryFixedBytes + receiver_len));
  return true;
}

}  // namespace

void EncodeDelivery(uint64_t id, double enqueued_at, std::string_view receiver,
                    std::string_view notification_json, std::string* dst) {
  std::string body;
  body.reserve(kDeliveryFixedBytes + receiver.size() + notification_json.size());
  body.push_back(static_cast<char>(OutboxRecordType::kDelivery));
  PutU64(&body, id);
  uint64_t bits = 0;
  std::memcpy(&bits, &enqueued_at, sizeof bits);
  PutU64(&body, bits);
  receiver = receiver.substr(0, 0xffff);
  PutU16(&body, static_cast<uint16_t>(receiver.size()));
  body.append(receiver);
  body.append(notification_json);
  Frame(body, dst);
}

void EncodeAck(uint64_t id, AckOutcome outcome, std::string* dst) {
  std::string body;
  body.push_back(static_cast<char>(OutboxRecordType::kAck));
  PutU64(&body, id);
  body.push_back(static_cast<char>(outcome));
  Frame(body, dst);
}

Result<DecodedSegment> DecodeOutboxSegment(std::string_view contents) {
  DecodedSegment out;
  if (contents.size() < kOutboxMagic.size()) {
    if (!contents.empty()) out.stopped_because = "short segment header";
    return out;
  }
  if (contents.substr(0, kOutboxMagic.size()) != kOutboxMagic) {
    return Status::Corruption("not an outbox segment (bad magic)");
  }
  size_t pos = kOutboxMagic.size();
  out.valid_end = pos;
  while (pos < contents.size()) {
    const std::string at = " at offset " + std::to_string(pos);
    if (contents.size() - pos < kFrameBytes) {
      out.stopped_because = "short record framing" + at;
      break;
    }
    uint64_t length = GetLE(contents.data() + pos, 4);
    uint32_t crc = static_cast<uint32_t>(GetLE(contents.data() + pos + 4, 4));
    if (length == 0 || length > kMaxOutboxRecordBytes) {
      out.stopped_because = "bad record length " + std::to_string(length) + at;
      break;
    }
    if (contents.size() - pos - kFrameBytes < length) {
      out.stopped_because = "short record" + at;
      break;
    }
    std::string_view body = contents.substr(pos + kFrameBytes, length);
    if (crc32c::Value(body) != crc) {
      out.stopped_because = "checksum mismatch" + at;
      break;
    }
    OutboxRecord record;
    std::string why;
    if (!DecodeBody(body, &record, &why)) {
      out.stopped_because = why + at;
      break;
    }
    out.records.push_back(std::move(record));
    pos += kFrameBytes + length;
    out.valid_end = pos;
  }
  return out;
}

std::string OutboxSegmentName(uint64_t number) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu.outbox", static_cast<unsigned long long>(number));
  return buf;
}

bool ParseOutboxSegmentName(std::string_view name, uint64_t* number) {
  constexpr std::string_view kSuffix = ".outbox";
  if (name.size() != 20 + kSuffix.size() || name.substr(20) != kSuffix) return false;
  uint64_t v = 0;
  for (char c : name.substr(0, 20)) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *number = v;
  return true;
}

}  // namespace trainwatch::notify
