// The outbox's segment files: encoding and decoding. docs/format/outbox.md is the specification.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trainwatch::notify {

inline constexpr std::string_view kOutboxMagic = "TWOUTBX1";
// Records longer than this (type byte and body) are treated as corrupt.
inline constexpr uint32_t kMaxOutboxRecordBytes = 4u << 20;

enum class OutboxRecordType : uint8_t { kDelivery = 1, kAck = 2 };
enum class AckOutcome : uint8_t { kDelivered = 1, kDropped = 2 };

// One decoded record. For kDelivery every field but `outcome` is set; for kAck, `id` and
// `outcome`.
struct OutboxRecord {
  OutboxRecordType type = OutboxRecordType::kDelivery;
  uint64_t id = 0;
  double enqueued_at = 0;         // unix seconds
  std::string receiver;           // the receiver's name
  std::string notification_json;  // NotificationToJson
  AckOutcome outcome = AckOutcome::kDelivered;
};

// Appends the framed record for a delivery of `notification_json` to `receiver` to `dst`.
void EncodeDelivery(uint64_t id, double enqueued_at, std::string_view receiver,
                    std::string_view notification_json, std::string* dst);
// Appends the framed record acknowledging delivery `id` to `dst`.
void EncodeAck(uint64_t id, AckOutcome outcome, std::string* dst);

struct DecodedSegment {
  std::vector<OutboxRecord> records;  // every record before the first bad one, in file order
  uint64_t valid_end = 0;             // offset just past the last good record
  // Empty when the whole file decoded; otherwise why decoding stopped at valid_end (a torn tail:
  // short framing or body, a checksum mismatch, a bad length or type).
  std::string stopped_because;
};

// Decodes a whole segment file. A file shorter than the magic (a segment whose creation was cut
// short) decodes as empty. Returns Corruption only when the magic is wrong: such a file is not an
// outbox segment at all.
Result<DecodedSegment> DecodeOutboxSegment(std::string_view contents);

// "00000000000000000007.outbox" for segment 7, and back (nullopt-like false for other names).
std::string OutboxSegmentName(uint64_t number);
bool ParseOutboxSegmentName(std::string_view name, uint64_t* number);

}  // namespace trainwatch::notify
