#include "tfevents/record_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "common/testing/temp_dir.h"
#include "tfevents/event_file_reader.h"
#include "tfevents/masked_crc.h"
#include "tfevents/record_writer.h"

namespace trainwatch::tfevents {
namespace {

std::string Framed(std::string_view data) {
  std::string out;
  AppendRecord(data, &out);
  return out;
}

TEST(MaskedCrcTest, MatchesPublishedCrc32cVectorsAndTheMaskFormula) {
  // iSCSI (RFC 3720, B.4) test vectors.
  std::string zeros(32, '\0');
  std::string ones(32, '\xff');
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(crc32c::Value(zeros), 0x8A9136AAu);
  EXPECT_EQ(crc32c::Value(ones), 0x62A8AB43u);
  EXPECT_EQ(crc32c::Value(ascending), 0x46DD794Eu);
  EXPECT_EQ(crc32c::Value(std::string_view("123456789")), 0xE3069283u);
  const uint32_t crc = 0xE3069283u;
  EXPECT_EQ(MaskedCrc("123456789", 9), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  EXPECT_EQ(UnmaskCrc(MaskCrc(crc)), crc);
}

TEST(RecordReaderTest, FramingLayoutIsLengthCrcDataCrc) {
  std::string r = Framed("abc");
  ASSERT_EQ(r.size(), 12u + 3 + 4);
  uint64_t length;
  std::memcpy(&length, r.data(), 8);
  EXPECT_EQ(length, 3u);
  uint32_t length_crc, data_crc;
  std::memcpy(&length_crc, r.data() + 8, 4);
  std::memcpy(&data_crc, r.data() + 15, 4);
  EXPECT_EQ(length_crc, MaskedCrc(r.data(), 8));
  EXPECT_EQ(data_crc, MaskedCrc("abc", 3));
}

TEST(RecordReaderTest, ReadsRecordsAsViewsIntoTheBuffer) {
  std::string buf = Framed("first") + Framed("") + Framed(std::string(5000, 'x'));
  RecordReader reader(buf, 100);
  RecordResult a = reader.Next();
  ASSERT_EQ(a.status, RecordStatus::kRecord);
  EXPECT_EQ(a.data, "first");
  EXPECT_EQ(a.offset, 100u);
  EXPECT_EQ(a.data.data(), buf.data() + 12);  // zero-copy
  RecordResult b = reader.Next();
  ASSERT_EQ(b.status, RecordStatus::kRecord);
  EXPECT_EQ(b.data, "");
  RecordResult c = reader.Next();
  ASSERT_EQ(c.status, RecordStatus::kRecord);
  EXPECT_EQ(c.data.size(), 5000u);
  RecordResult end = reader.Next();
  EXPECT_EQ(end.status, RecordStatus::kIncomplete);
  EXPECT_TRUE(reader.at_end());
  EXPECT_EQ(reader.position(), 100 + buf.size());
}

TEST(RecordReaderTest, EveryTruncationOfARecordIsIncompleteAndConsumesNothing) {
  const std::string good = Framed("hello");
  const std::string rec = Framed("the record being written");
  for (size_t cut = 0; cut < rec.size(); ++cut) {
    std::string buf = good + rec.substr(0, cut);
    RecordReader reader(buf);
    ASSERT_EQ(reader.Next().status, RecordStatus::kRecord);
    RecordResult r = reader.Next();
    EXPECT_EQ(r.status, RecordStatus::kIncomplete) << "cut at " << cut;
    EXPECT_EQ(r.consumed, 0u);
    EXPECT_EQ(r.offset, good.size());
    EXPECT_EQ(r.needed, cut < 12 ? 12u : rec.size()) << "cut at " << cut;
    EXPECT_EQ(reader.position(), good.size());
  }
}

TEST(RecordReaderTest, BadDataCrcSkipsExactlyThatRecord) {
  std::string bad = Framed("payload");
  bad[14] ^= 0x01;  // a data byte
  std::string buf = Framed("a") + bad + Framed("b");
  RecordReader reader(buf);
  EXPECT_EQ(reader.Next().data, "a");
  RecordResult r = reader.Next();
  ASSERT_EQ(r.status, RecordStatus::kCorrupt);
  EXPECT_STREQ(r.reason, "data checksum mismatch");
  EXPECT_EQ(r.offset, Framed("a").size());
  EXPECT_EQ(r.consumed, bad.size());
  RecordResult b = reader.Next();
  ASSERT_EQ(b.status, RecordStatus::kRecord);
  EXPECT_EQ(b.data, "b");
}

TEST(RecordReaderTest, BadLengthCrcResynchronisesAtTheNextValidHeader) {
  std::string bad = Framed("payload");
  bad[3] ^= 0x40;  // the length: its CRC no longer matches and it cannot be trusted
  const std::string a = Framed("a");
  std::string buf = a + bad + Framed("b") + Framed("c");
  RecordReader reader(buf);
  EXPECT_EQ(reader.Next().data, "a");
  RecordResult r = reader.Next();
  ASSERT_EQ(r.status, RecordStatus::kCorrupt);
  EXPECT_STREQ(r.reason, "length checksum mismatch");
  EXPECT_EQ(r.offset, a.size());
  EXPECT_EQ(r.consumed, bad.size());
  EXPECT_EQ(DescribeCorruption("run/f", r), "run/f:" + std::to_string(a.size()) +
                                                ": length checksum mismatch (" +
                                                std::to_string(bad.size()) + " bytes skipped)");
  EXPECT_EQ(reader.Next().data, "b");
  EXPECT_EQ(reader.Next().data, "c");
}

TEST(RecordReaderTest, GarbageBetweenRecordsIsSkippedToTheByte) {
  const std::string garbage = "this is not a record at all, just noise that a broken copy left";
  std::string buf = Framed("a") + garbage + Framed("b");
  RecordReader reader(buf);
  EXPECT_EQ(reader.Next().data, "a");
  RecordResult r = reader.Next();
  ASSERT_EQ(r.status, RecordStatus::kCorrupt);
  EXPECT_EQ(r.consumed, garbage.size());
  EXPECT_EQ(reader.Next().data, "b");
}

TEST(RecordReaderTest, GarbageAtTheEndLeavesOnlyTheLastElevenBytesPending) {
  const std::string a = Framed("a");
  std::string buf = a + std::string(40, 'z');
  RecordReader reader(buf);
  EXPECT_EQ(reader.Next().data, "a");
  RecordResult r = reader.Next();
  ASSERT_EQ(r.status, RecordStatus::kCorrupt);
  EXPECT_EQ(r.consumed, 40u - 11u);
  RecordResult tail = reader.Next();
  EXPECT_EQ(tail.status, RecordStatus::kIncomplete);
  EXPECT_EQ(reader.position(), buf.size() - 11);
}

TEST(RecordReaderTest, ALengthOverTheLimitIsCorruptEvenWithAValidCrc) {
  std::string big = Framed(std::string(100, 'q'));
  std::string buf = big + Framed("next");
  RecordReader reader(buf, 0, /*max_record_bytes=*/50);
  RecordResult r = reader.Next();
  ASSERT_EQ(r.status, RecordStatus::kCorrupt);
  EXPECT_STREQ(r.reason, "record length over the limit");
  EXPECT_EQ(r.consumed, big.size());
  EXPECT_EQ(reader.Next().data, "next");
}

void AppendToFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(EventFileReaderTest, FollowsAGrowingFileAcrossPartialWrites) {
  test::TempDir dir;
  const std::string path = dir.Join("events.out.tfevents.1.host");
  AppendToFile(path, "");
  auto reader = EventFileReader::Open(path, 0, 4096);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::string all;
  std::vector<std::string> want;
  for (int i = 0; i < 200; ++i)
    want.push_back(
        std::string(static_cast<size_t>(i * 97 % 9000), static_cast<char>('a' + i % 26)));
  for (const std::string& w : want) all += Framed(w);
  std::vector<std::string> got;
  size_t written = 0;
  for (size_t piece = 1; written < all.size(); piece = piece * 3 % 10007 + 1) {
    const size_t n = std::min(piece, all.size() - written);
    AppendToFile(path, std::string_view(all).substr(written, n));
    written += n;
    ASSERT_TRUE((*reader)->Fill().ok());
    while (true) {
      RecordResult r = (*reader)->Next();
      if (r.status == RecordStatus::kIncomplete) {
        auto more = (*reader)->Fill();
        ASSERT_TRUE(more.ok());
        if (*more == 0) break;
        continue;
      }
      ASSERT_EQ(r.status, RecordStatus::kRecord);
      got.emplace_back(r.data);
    }
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ((*reader)->position(), all.size());
  EXPECT_EQ((*reader)->pending_bytes(), 0u);
}

TEST(EventFileReaderTest, StartsAtASavedOffset) {
  test::TempDir dir;
  const std::string path = dir.Join("f");
  const std::string a = Framed("one");
  AppendToFile(path, a + Framed("two"));
  auto reader = EventFileReader::Open(path, a.size());
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE((*reader)->Fill().ok());
  RecordResult r = (*reader)->Next();
  ASSERT_EQ(r.status, RecordStatus::kRecord);
  EXPECT_EQ(r.data, "two");
  EXPECT_EQ(r.offset, a.size());
}

TEST(EventFileReaderTest, MissingFileIsAnIoError) {
  auto reader = EventFileReader::Open("/nonexistent/events.out.tfevents.x");
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("/nonexistent/events.out.tfevents.x"),
            std::string::npos);
}

}  // namespace
}  // namespace trainwatch::tfevents
