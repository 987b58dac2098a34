#include "storage/wal/wal_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "storage/wal/wal_format.h"
#include "storage/wal/wal_test_util.h"
#include "storage/wal/wal_writer.h"

namespace trainwatch::storage::wal {
namespace {

using ::testing::HasSubstr;

std::string Segment(uint64_t first_lsn, const std::vector<std::string>& payloads) {
  std::string out;
  EncodeSegmentHeader(first_lsn, &out);
  for (size_t i = 0; i < payloads.size(); ++i) EncodeRecord(first_lsn + i, payloads[i], &out);
  return out;
}

struct ReadResult {
  Status header;
  std::vector<std::pair<uint64_t, std::string>> records;
  Status error;  // of the first bad record, OK if the data ended cleanly
  uint64_t valid_end = 0;
};

ReadResult ReadSegment(std::string_view contents) {
  ReadResult out;
  SegmentReader reader(contents);
  auto header = reader.ReadHeader();
  out.header = header.status();
  if (header.ok()) {
    while (true) {
      auto record = reader.Next();
      if (!record.ok()) {
        out.error = record.status();
        EXPECT_EQ(reader.Next().status().code(), StatusCode::kCorruption);  // sticky
        break;
      }
      if (!record->has_value()) break;
      out.records.emplace_back((*record)->lsn, std::string((*record)->payload));
    }
  }
  out.valid_end = reader.valid_end();
  return out;
}

TEST(SegmentReaderTest, EmptySegmentHasNoRecords) {
  ReadResult r = ReadSegment(Segment(9, {}));
  EXPECT_TRUE(r.header.ok());
  EXPECT_TRUE(r.error.ok());
  EXPECT_TRUE(r.records.empty());
  EXPECT_EQ(r.valid_end, kSegmentHeaderSize);
}

TEST(SegmentReaderTest, ReadsRecordsInOrder) {
  ReadResult r = ReadSegment(Segment(9, {"a", "", "ccc"}));
  ASSERT_TRUE(r.error.ok());
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[0], std::make_pair(uint64_t{9}, std::string("a")));
  EXPECT_EQ(r.records[1], std::make_pair(uint64_t{10}, std::string("")));
  EXPECT_EQ(r.records[2], std::make_pair(uint64_t{11}, std::string("ccc")));
}

TEST(SegmentReaderTest, BadHeaders) {
  const std::string good = Segment(1, {"a"});
  EXPECT_THAT(ReadSegment(good.substr(0, 10)).header.message(), HasSubstr("header truncated"));
  std::string magic = good;
  magic[0] = 'X';
  EXPECT_THAT(ReadSegment(magic).header.message(), HasSubstr("magic"));
  std::string crc = good;
  crc[14] ^= 1;  // inside first_lsn
  EXPECT_THAT(ReadSegment(crc).header.message(), HasSubstr("checksum"));
  // A future version with a valid checksum.
  std::string v2 = std::string(kSegmentMagic);
  PutFixed32(&v2, 2);
  PutFixed64(&v2, 1);
  PutFixed32(&v2, MaskCrc(crc32c::Value(v2)));
  EXPECT_THAT(ReadSegment(v2).header.message(), HasSubstr("unsupported segment version 2"));
}

// Cutting the data anywhere inside the last record leaves the earlier records and reports where
// the torn record starts.
TEST(SegmentReaderTest, TornTailAtEveryOffset) {
  const std::vector<std::string> payloads = {"first", "second record", "third and last record"};
  const std::string full = Segment(1, payloads);
  const uint64_t last_start = full.size() - (kRecordHeaderSize + payloads[2].size());
  for (uint64_t cut = last_start + 1; cut < full.size(); ++cut) {
    ReadResult r = ReadSegment(std::string_view(full).substr(0, cut));
    ASSERT_EQ(r.records.size(), 2u) << "cut at " << cut;
    EXPECT_EQ(r.error.code(), StatusCode::kCorruption);
    EXPECT_THAT(r.error.message(), HasSubstr("at offset " + std::to_string(last_start)));
    EXPECT_THAT(r.error.message(), HasSubstr("truncated"));
    EXPECT_EQ(r.valid_end, last_start);
  }
  // A cut exactly at a record boundary is a clean end.
  ReadResult r = ReadSegment(std::string_view(full).substr(0, last_start));
  EXPECT_TRUE(r.error.ok());
  EXPECT_EQ(r.records.size(), 2u);
}

// Flipping any single bit after the header is caught, and never yields a wrong record.
TEST(SegmentReaderTest, EveryBitFlipIsDetected) {
  const std::vector<std::string> payloads = {"alpha", "beta", "gamma"};
  const std::string full = Segment(1, payloads);
  for (size_t byte = kSegmentHeaderSize; byte < full.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = full;
      flipped[byte] = static_cast<char>(flipped[byte] ^ (1 << bit));
      ReadResult r = ReadSegment(flipped);
      ASSERT_EQ(r.error.code(), StatusCode::kCorruption) << "byte " << byte << " bit " << bit;
      ASSERT_LT(r.records.size(), payloads.size());
      for (size_t i = 0; i < r.records.size(); ++i) {
        EXPECT_EQ(r.records[i].second, payloads[i]);
      }
    }
  }
}

TEST(SegmentReaderTest, WrongLsnIsCorruption) {
  std::string data;
  EncodeSegmentHeader(5, &data);
  EncodeRecord(5, "a", &data);
  EncodeRecord(7, "b", &data);  // well-formed, but not lsn 6
  ReadResult r = ReadSegment(data);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_THAT(r.error.message(), HasSubstr("has lsn 7, expected 6"));
}

TEST(SegmentReaderTest, HugeLengthIsCorruptionNotAnAllocation) {
  std::string data;
  EncodeSegmentHeader(1, &data);
  PutFixed32(&data, 0xFFFFFFFFu);
  PutFixed32(&data, 0);
  PutFixed64(&data, 1);
  ReadResult r = ReadSegment(data);
  EXPECT_THAT(r.error.message(), HasSubstr("exceeds the maximum"));
}

}  // namespace
}  // namespace trainwatch::storage::wal
