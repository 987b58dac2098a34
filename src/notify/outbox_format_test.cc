#include "notify/outbox_format.h"

#include <gtest/gtest.h>

namespace trainwatch::notify {
namespace {

std::string ThreeRecords() {
  std::string s(kOutboxMagic);
  EncodeDelivery(1, 1767225600.5, "ops", R"({"alert_id":"1"})", &s);
  EncodeDelivery(2, 1767225601.0, "mail", R"({"alert_id":"2"})", &s);
  EncodeAck(1, AckOutcome::kDelivered, &s);
  return s;
}

TEST(OutboxFormat, RoundTrips) {
  std::string s = ThreeRecords();
  Result<DecodedSegment> d = DecodeOutboxSegment(s);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->records.size(), 3u);
  EXPECT_TRUE(d->stopped_because.empty());
  EXPECT_EQ(d->valid_end, s.size());
  EXPECT_EQ(d->records[0].type, OutboxRecordType::kDelivery);
  EXPECT_EQ(d->records[0].id, 1u);
  EXPECT_EQ(d->records[0].enqueued_at, 1767225600.5);
  EXPECT_EQ(d->records[0].receiver, "ops");
  EXPECT_EQ(d->records[0].notification_json, R"({"alert_id":"1"})");
  EXPECT_EQ(d->records[1].receiver, "mail");
  EXPECT_EQ(d->records[2].type, OutboxRecordType::kAck);
  EXPECT_EQ(d->records[2].id, 1u);
  EXPECT_EQ(d->records[2].outcome, AckOutcome::kDelivered);
}

TEST(OutboxFormat, EveryTornTailKeepsTheRecordsBeforeIt) {
  std::string s = ThreeRecords();
  std::string two(kOutboxMagic);
  EncodeDelivery(1, 1767225600.5, "ops", R"({"alert_id":"1"})", &two);
  EncodeDelivery(2, 1767225601.0, "mail", R"({"alert_id":"2"})", &two);
  for (size_t cut = two.size() + 1; cut < s.size(); ++cut) {
    Result<DecodedSegment> d = DecodeOutboxSegment(std::string_view(s).substr(0, cut));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->records.size(), 2u) << cut;
    EXPECT_EQ(d->valid_end, two.size());
    EXPECT_FALSE(d->stopped_because.empty());
  }
}

TEST(OutboxFormat, ChecksumMismatchStopsThere) {
  std::string s = ThreeRecords();
  s[s.size() - 3] ^= 0x40;  // inside the ack's body
  Result<DecodedSegment> d = DecodeOutboxSegment(s);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->records.size(), 2u);
  EXPECT_NE(d->stopped_because.find("checksum"), std::string::npos);
}

TEST(OutboxFormat, ShortHeaderIsEmptyWrongMagicIsCorruption) {
  Result<DecodedSegment> d = DecodeOutboxSegment("TWOU");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->records.empty());
  EXPECT_EQ(DecodeOutboxSegment("NOTANOUTBOXFILE").status().code(), StatusCode::kCorruption);
}

TEST(OutboxFormat, SegmentNames) {
  EXPECT_EQ(OutboxSegmentName(7), "00000000000000000007.outbox");
  uint64_t n = 0;
  EXPECT_TRUE(ParseOutboxSegmentName("00000000000000000123.outbox", &n));
  EXPECT_EQ(n, 123u);
  EXPECT_FALSE(ParseOutboxSegmentName("00000000000000000123.outbox.corrupt", &n));
  EXPECT_FALSE(ParseOutboxSegmentName("123.outbox", &n));
}

}  // namespace
}  // namespace trainwatch::notify
