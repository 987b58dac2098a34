// Write-ahead log segments (src/storage/wal/wal_reader.h, docs/format/wal.md) as recovery finds
// them after a crash: SegmentReader over the bytes, then the whole WalLog on an in-memory file
// system holding the file as its last segment: Open (which cuts a torn tail), Replay, one Append,
// and Open + Replay again.
//
// Two kinds of input. Raw: the bytes are the segment. Framed (first byte 'F'): then a u64 first
// LSN, a byte naming a record to damage (its LSN or one payload byte; 0: none), and pieces of
// <u16 length><bytes>, each a record with consecutive LSNs and a valid checksum.
//
// Checks, besides memory safety: records come back in order with consecutive LSNs, each starting
// where the previous one ended, payloads inside the file; a failure is sticky; Open keeps exactly
// the good records (the file is cut to them) and Replay hands out exactly those; a record appended
// after recovery is replayed after them with the next LSN.
#include <cstddef>
#include <cstdint>
#include <future>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "storage/wal/wal_format.h"
#include "storage/wal/wal_log.h"
#include "storage/wal/wal_reader.h"

namespace {

using namespace trainwatch;
using namespace trainwatch::storage::wal;

std::string FramedSegment(std::string_view in) {
  if (in.size() < 9) return std::string(in);
  uint64_t first_lsn = DecodeFixed64(in.data()) % 1000000 + 1;
  uint8_t damage = static_cast<uint8_t>(in[8]);
  in.remove_prefix(9);
  std::string file(kSegmentMagic);
  PutFixed32(&file, kFormatVersion);
  PutFixed64(&file, first_lsn);
  PutFixed32(&file, MaskCrc(crc32c::Value(file.data(), 20)));
  uint64_t lsn = first_lsn;
  for (int index = 1; in.size() >= 2; ++index, ++lsn) {
    size_t len = static_cast<uint8_t>(in[0]) | static_cast<uint8_t>(in[1]) << 8;
    in.remove_prefix(2);
    std::string payload(in.substr(0, len));
    in.remove_prefix(payload.size());
    uint64_t record_lsn = lsn;
    if (damage == index && (damage & 1)) record_lsn += 2;  // an LSN gap, with a valid checksum
    PutFixed32(&file, static_cast<uint32_t>(payload.size()));
    PutFixed32(&file, MaskCrc(RecordCrc(record_lsn, payload)));
    PutFixed64(&file, record_lsn);
    if (damage == index && !(damage & 1) && !payload.empty()) payload[0] ^= 1;  // a bad checksum
    file += payload;
  }
  file += in;  // a torn tail
  return file;
}

struct Decoded {
  bool header_ok = false;
  uint64_t first_lsn = 0;
  std::vector<std::pair<uint64_t, std::string>> records;
  uint64_t valid_end = 0;
};

Decoded Read(std::string_view contents) {
  Decoded out;
  SegmentReader reader(contents);
  auto header = reader.ReadHeader();
  if (!header.ok()) {
    FUZZ_CHECK(reader.valid_end() == 0, "valid_end moved by a bad header");
    return out;
  }
  out.header_ok = true;
  out.first_lsn = header->first_lsn;
  FUZZ_CHECK(reader.valid_end() == kSegmentHeaderSize, "valid_end after the header");
  for (;;) {
    const uint64_t at = reader.valid_end();
    auto next = reader.Next();
    if (!next.ok()) {
      FUZZ_CHECK(!reader.Next().ok(), "a failure that did not stick");
      FUZZ_CHECK(reader.valid_end() == at, "valid_end moved by a bad record");
      break;
    }
    if (!next->has_value()) {
      FUZZ_CHECK(at == contents.size(), "end of data before the end");
      break;
    }
    const RecordView& r = **next;
    FUZZ_CHECK(r.offset == at, "record not where the previous one ended");
    FUZZ_CHECK(r.lsn == out.first_lsn + out.records.size(), "LSNs not consecutive");
    FUZZ_CHECK(fuzz::ViewWithin(r.payload, contents), "payload outside the segment");
    FUZZ_CHECK(reader.valid_end() == at + kRecordHeaderSize + r.payload.size(), "valid_end after a record");
    out.records.emplace_back(r.lsn, std::string(r.payload));
  }
  out.valid_end = reader.valid_end();
  FUZZ_CHECK(out.valid_end <= contents.size(), "valid_end past the end");
  return out;
}

std::vector<std::pair<uint64_t, std::string>> ReplayAll(WalLog& log) {
  std::vector<std::pair<uint64_t, std::string>> out;
  auto stats = log.Replay(0, [&](uint64_t lsn, std::string_view record) {
    out.emplace_back(lsn, std::string(record));
    return Status::Ok();
  });
  FUZZ_CHECK(stats.ok(), stats.status().ToString());
  return out;
}

// The segment as the last (only) one of a WAL directory.
void Recover(const std::string& contents, const Decoded& decoded) {
  const uint64_t name_lsn = decoded.header_ok ? decoded.first_lsn : 1;
  const std::string path = "/wal/" + SegmentFileName(name_lsn);
  fuzz::MemFileSystem fs;
  fs.Put(path, contents);
  std::vector<std::pair<uint64_t, std::string>> expected = decoded.records;
  uint64_t next_lsn = expected.empty() ? name_lsn : expected.back().first + 1;
  {
    auto log = WalLog::Open(fs, "/wal");
    FUZZ_CHECK(log.ok(), log.status().ToString());
    FUZZ_CHECK(*fs.FileSize(path) == (expected.empty() ? 0 : decoded.valid_end), "torn tail not cut");
    FUZZ_CHECK((*log)->NextLsn() == next_lsn, "NextLsn after recovery");
    FUZZ_CHECK(ReplayAll(**log) == expected, "Replay gave other records than the segment holds");
    std::promise<std::pair<Status, uint64_t>> done;
    (*log)->Append("appended", [&](const Status& s, uint64_t lsn) { done.set_value({s, lsn}); });
    auto [status, lsn] = done.get_future().get();
    FUZZ_CHECK(status.ok() && lsn == next_lsn, "append after recovery: " + status.ToString());
    expected.emplace_back(lsn, "appended");
  }
  auto log = WalLog::Open(fs, "/wal");
  FUZZ_CHECK(log.ok(), log.status().ToString());
  FUZZ_CHECK(ReplayAll(**log) == expected, "Replay after an append lost records");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string contents = !input.empty() && input[0] == 'F' ? FramedSegment(input.substr(1)) : std::string(input);
  const Decoded decoded = Read(contents);
  Recover(contents, decoded);
  return 0;
}
