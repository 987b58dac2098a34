// The notification outbox's segment files (src/notify/outbox_format.h, docs/format/outbox.md),
// replayed at every start: each delivery's notification JSON is read back (NotificationFromJson)
// and rendered as the notifiers would send it (webhook JSON, Slack, Alertmanager, email).
//
// Two kinds of input. Raw: the bytes are one segment file. Framed (first byte 'F'): the rest is
// pieces of <u16 length><bytes>, each framed with its length and a valid CRC after the magic, so
// that record bodies reach the decoder.
//
// Checks, besides memory safety and no exception escaping: decoding fails only for a bad magic;
// valid_end lies in the file, and a reason is given exactly when it is not the end; a notification
// read back writes JSON that reads back equal (NaN apart) and every rendering is produced.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/crc32c.h"
#include "fuzz/fuzz_support.h"
#include "notify/alertmanager_notifier.h"
#include "notify/email_notifier.h"
#include "notify/notification.h"
#include "notify/outbox_format.h"
#include "notify/slack_notifier.h"
#include "storage/binary_io.h"

namespace {

using namespace trainwatch;

std::string FramedSegment(std::string_view in) {
  std::string file(notify::kOutboxMagic);
  while (in.size() >= 2) {
    size_t len = static_cast<uint8_t>(in[0]) | static_cast<uint8_t>(in[1]) << 8;
    in.remove_prefix(2);
    std::string_view body = in.substr(0, len);
    in.remove_prefix(body.size());
    storage::PutFixed32(&file, static_cast<uint32_t>(body.size()));
    storage::PutFixed32(&file, crc32c::Value(body));
    file += body;
  }
  file += in;  // a torn tail
  return file;
}

bool SameNotification(notify::Notification a, notify::Notification b) {
  for (auto* n : {&a, &b}) {  // NaN reads back as NaN: compare the rest
    if (std::isnan(n->value)) n->value = 0;
    if (std::isnan(n->time)) n->time = 0;
    if (std::isnan(n->starts_at)) n->starts_at = 0;
    if (std::isnan(n->ends_at)) n->ends_at = 0;
  }
  return a == b;
}

void Replay(std::string_view json) {
  auto n = notify::NotificationFromJson(json);
  if (!n.ok()) return;
  const std::string written = notify::NotificationToJson(*n);
  FUZZ_CHECK(nlohmann::json::accept(written), "NotificationToJson wrote invalid JSON: " + written);
  auto back = notify::NotificationFromJson(written);
  FUZZ_CHECK(back.ok(), "NotificationToJson's output refused: " + back.status().message());
  FUZZ_CHECK(SameNotification(*n, *back), "a notification changed on its way through JSON: " + written);
  constexpr double kNow = 1767225600.0;
  FUZZ_CHECK(nlohmann::json::accept(notify::SlackPayload(*n)), "Slack payload is not JSON");
  FUZZ_CHECK(nlohmann::json::accept(notify::AlertmanagerPayload(*n, kNow)), "Alertmanager payload is not JSON");
  notify::EmailOptions email;
  email.from = "trainwatch <tw@example.com>";
  email.to = {"oncall@example.com"};
  (void)notify::EmailMessage(*n, email, kNow, "1.tw@example.com");
  (void)notify::Headline(*n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string file = !input.empty() && input[0] == 'F' ? FramedSegment(input.substr(1)) : std::string(input);
  auto decoded = notify::DecodeOutboxSegment(file);
  if (!decoded.ok()) {
    FUZZ_CHECK(!file.starts_with(notify::kOutboxMagic), "a segment with its magic refused");
    return 0;
  }
  FUZZ_CHECK(decoded->valid_end <= file.size(), "valid_end past the end");
  FUZZ_CHECK(decoded->stopped_because.empty() == (decoded->valid_end == file.size()),
             "stopped_because '" + decoded->stopped_because + "' at " + std::to_string(decoded->valid_end));
  for (const notify::OutboxRecord& r : decoded->records) {
    if (r.type == notify::OutboxRecordType::kDelivery) Replay(r.notification_json);
  }
  return 0;
}
