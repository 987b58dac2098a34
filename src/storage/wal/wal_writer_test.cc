#include "storage/wal/wal_writer.h"

#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "common/testing/temp_dir.h"
#include "storage/wal/wal_format.h"
#include "storage/wal/wal_reader.h"
#include "storage/wal/wal_test_util.h"

namespace trainwatch::storage::wal {
namespace {

TEST(WalFormatTest, SegmentFileNames) {
  EXPECT_EQ(SegmentFileName(1), "00000000000000000001.wal");
  EXPECT_EQ(SegmentFileName(UINT64_MAX), "18446744073709551615.wal");
  EXPECT_EQ(ParseSegmentFileName("00000000000000000042.wal"), 42u);
  EXPECT_EQ(ParseSegmentFileName("18446744073709551615.wal"), UINT64_MAX);
  EXPECT_EQ(ParseSegmentFileName("18446744073709551616.wal"), std::nullopt);  // overflow
  EXPECT_EQ(ParseSegmentFileName("42.wal"), std::nullopt);
  EXPECT_EQ(ParseSegmentFileName("0000000000000000004x.wal"), std::nullopt);
  EXPECT_EQ(ParseSegmentFileName("00000000000000000042.wal.tmp"), std::nullopt);
  EXPECT_EQ(ParseSegmentFileName("00000000000000000042.log"), std::nullopt);
}

TEST(WalFormatTest, MaskRoundTripsAndChangesTheValue) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu}) {
    EXPECT_EQ(UnmaskCrc(MaskCrc(crc)), crc);
    EXPECT_NE(MaskCrc(crc), crc);
  }
}

TEST(WalFormatTest, HeaderLayout) {
  std::string header;
  EncodeSegmentHeader(0x0102030405060708ull, &header);
  ASSERT_EQ(header.size(), kSegmentHeaderSize);
  EXPECT_EQ(header.substr(0, 8), "TWWALSEG");
  EXPECT_EQ(DecodeFixed32(header.data() + 8), kFormatVersion);
  EXPECT_EQ(header.substr(12, 8), std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  EXPECT_EQ(DecodeFixed32(header.data() + 20), MaskCrc(crc32c::Value(header.data(), 20)));
}

TEST(WalFormatTest, RecordLayout) {
  std::string record;
  EncodeRecord(7, "abc", &record);
  ASSERT_EQ(record.size(), kRecordHeaderSize + 3);
  EXPECT_EQ(record.substr(0, 4), std::string("\x03\0\0\0", 4));
  EXPECT_EQ(DecodeFixed64(record.data() + 8), 7u);
  EXPECT_EQ(record.substr(16), "abc");
  // The CRC covers the LSN's 8 little-endian bytes, then the payload.
  const std::string covered = std::string("\x07\0\0\0\0\0\0\0", 8) + "abc";
  EXPECT_EQ(UnmaskCrc(DecodeFixed32(record.data() + 4)), crc32c::Value(covered));
}

// The example in docs/format/wal.md.
TEST(WalFormatTest, DocumentedExample) {
  std::string segment;
  EncodeSegmentHeader(1, &segment);
  EncodeRecord(1, "a", &segment);
  EncodeRecord(2, "bc", &segment);
  const unsigned char expected[] = {
      0x54, 0x57, 0x57, 0x41, 0x4C, 0x53, 0x45, 0x47, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x62, 0x43, 0xBA, 0xA8, 0x01, 0x00, 0x00, 0x00, 0xC5, 0xA3,
      0x98, 0xFF, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x61, 0x02, 0x00, 0x00, 0x00,
      0x7C, 0x36, 0xE0, 0xAB, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x62, 0x63};
  EXPECT_EQ(segment, std::string(reinterpret_cast<const char*>(expected), sizeof(expected)));
}

class SegmentWriterTest : public ::testing::Test {
 protected:
  FileSystem& fs_ = PosixFileSystem();
  test::TempDir dir_;
};

TEST_F(SegmentWriterTest, RoundTripThroughReader) {
  const std::string path = dir_.Join(SegmentFileName(100));
  auto writer = SegmentWriter::Create(fs_, path, 100);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  std::vector<std::string> payloads = {"", "x", std::string(100000, 'y'), Payload(3)};
  uint64_t expected_size = kSegmentHeaderSize;
  for (size_t i = 0; i < payloads.size(); ++i) {
    (*writer)->Add(100 + i, payloads[i]);
    expected_size += kRecordHeaderSize + payloads[i].size();
    if (i == 1) {
      ASSERT_TRUE((*writer)->Flush().ok());
    }
  }
  EXPECT_EQ((*writer)->size(), expected_size);
  EXPECT_EQ((*writer)->records(), payloads.size());
  EXPECT_EQ((*writer)->next_lsn(), 104u);
  ASSERT_TRUE((*writer)->Sync().ok());
  ASSERT_TRUE((*writer)->Close().ok());

  std::string contents = *fs_.ReadFile(path);
  EXPECT_EQ(contents.size(), expected_size);
  SegmentReader reader(contents);
  auto header = reader.ReadHeader();
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->first_lsn, 100u);
  for (size_t i = 0; i < payloads.size(); ++i) {
    auto record = reader.Next();
    ASSERT_TRUE(record.ok()) << record.status().ToString();
    ASSERT_TRUE(record->has_value());
    EXPECT_EQ((*record)->lsn, 100 + i);
    EXPECT_EQ((*record)->payload, payloads[i]);
  }
  auto end = reader.Next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
  EXPECT_EQ(reader.valid_end(), expected_size);
}

TEST_F(SegmentWriterTest, HeaderIsWrittenWithTheFirstFlush) {
  const std::string path = dir_.Join(SegmentFileName(1));
  auto writer = SegmentWriter::Create(fs_, path, 1);
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ(*fs_.FileSize(path), 0u);
  (*writer)->Add(1, "a");
  ASSERT_TRUE((*writer)->Flush().ok());
  EXPECT_EQ(*fs_.FileSize(path), kSegmentHeaderSize + kRecordHeaderSize + 1);
}

TEST_F(SegmentWriterTest, RefusesANonEmptyExistingFile) {
  const std::string path = dir_.Join(SegmentFileName(1));
  ASSERT_TRUE(WriteFileAtomic(fs_, path, "something").ok());
  EXPECT_EQ(SegmentWriter::Create(fs_, path, 1).status().code(), StatusCode::kInternal);
}

TEST_F(SegmentWriterTest, ReusesAnEmptyPlaceholder) {
  const std::string path = dir_.Join(SegmentFileName(5));
  ASSERT_TRUE(WriteFileAtomic(fs_, path, "").ok());
  auto writer = SegmentWriter::Create(fs_, path, 5);
  ASSERT_TRUE(writer.ok());
  (*writer)->Add(5, "five");
  ASSERT_TRUE((*writer)->Close().ok());
  std::string contents = *fs_.ReadFile(path);
  SegmentReader reader(contents);
  ASSERT_TRUE(reader.ReadHeader().ok());
  auto record = reader.Next();
  ASSERT_TRUE(record.ok() && record->has_value());
  EXPECT_EQ((*record)->payload, "five");
}

}  // namespace
}  // namespace trainwatch::storage::wal
