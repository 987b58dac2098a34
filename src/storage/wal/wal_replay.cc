// WalLog: recovery at Open and Replay. The rules are in docs/format/wal.md, "Recovery".
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "storage/wal/wal_format.h"
#include "storage/wal/wal_log.h"
#include "storage/wal/wal_reader.h"

namespace trainwatch::storage::wal {
namespace {

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) {
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}

std::string Range(uint64_t first, uint64_t last) {
  if (first == last) return "lsn " + std::to_string(first);
  return "lsns " + std::to_string(first) + ".." + std::to_string(last);
}

}  // namespace

Status WalLog::Recover() {
  TW_RETURN_IF_ERROR(fs_.CreateDirs(dir_));
  TW_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_.ListDir(dir_));
  std::vector<Segment> segments;
  for (const std::string& name : names) {
    std::optional<uint64_t> first_lsn = ParseSegmentFileName(name);
    if (!first_lsn) continue;  // not ours: left alone
    TW_ASSIGN_OR_RETURN(uint64_t bytes, fs_.FileSize(dir_ + "/" + name));
    segments.push_back({*first_lsn, bytes});
  }
  std::sort(segments.begin(), segments.end(),
            [](const Segment& a, const Segment& b) { return a.first_lsn < b.first_lsn; });

  uint64_t next_lsn = 1;
  ReplayStats recovery;
  if (!segments.empty()) {
    // Only the last segment can have been cut short by a crash. Keep its good records and cut
    // everything from the first bad one on; if no record is good, cut it to 0 bytes, leaving an
    // empty placeholder whose name still tells the next LSN (and which the next segment reuses).
    Segment& last = segments.back();
    const std::string name = SegmentFileName(last.first_lsn);
    const std::string path = SegmentPath(last.first_lsn);
    TW_ASSIGN_OR_RETURN(std::string contents, fs_.ReadFile(path));
    SegmentReader reader(contents);
    Status problem;
    bool has_records = false;
    uint64_t last_lsn = 0;
    if (!contents.empty()) {
      Result<SegmentHeader> header = reader.ReadHeader();
      if (!header.ok()) {
        problem = header.status();
      } else if (header->first_lsn != last.first_lsn) {
        problem = Status::Corruption("header says first lsn " + std::to_string(header->first_lsn));
      } else {
        while (true) {
          Result<std::optional<RecordView>> record = reader.Next();
          if (!record.ok()) {
            problem = record.status();
            break;
          }
          if (!record->has_value()) break;
          has_records = true;
          last_lsn = (*record)->lsn;
        }
      }
    }
    const uint64_t keep = has_records ? reader.valid_end() : 0;
    if (keep < contents.size()) TW_RETURN_IF_ERROR(fs_.Truncate(path, keep));
    {
      // What a crashed process wrote may still sit only in the page cache. Sync the file (which
      // also persists a truncation) and the directory, so that everything Replay hands out is
      // durable and cannot vanish in a later crash after the server has applied it.
      TW_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs_.OpenAppendable(path));
      TW_RETURN_IF_ERROR(file->Sync());
      TW_RETURN_IF_ERROR(file->Close());
      TW_RETURN_IF_ERROR(fs_.SyncDir(dir_));
    }
    if (keep < contents.size()) {
      recovery.torn_tail_bytes = contents.size() - keep;
      recovery.report = "segment " + name + ": cut " + std::to_string(contents.size() - keep) +
                        " bytes at offset " + std::to_string(keep) + " (" +
                        (problem.ok() ? std::string("no complete record") : problem.message()) +
                        ")";
      last.bytes = keep;
    }
    next_lsn = has_records ? last_lsn + 1 : last.first_lsn;
  }

  MutexLock lock(mu_);
  segments_ = std::move(segments);
  next_lsn_ = next_lsn;
  recovery_ = std::move(recovery);
  return Status::Ok();
}

Result<ReplayStats> WalLog::Replay(
    uint64_t from_lsn, const std::function<Status(uint64_t lsn, std::string_view record)>& fn) {
  std::vector<Segment> segments;
  uint64_t next_lsn;
  ReplayStats stats;
  {
    MutexLock lock(mu_);
    if (appended_) return Status::InvalidArgument("WAL Replay must come before the first Append");
    segments = segments_;
    next_lsn = next_lsn_;
    stats = recovery_;
  }
  std::vector<std::string> report;
  if (!stats.report.empty()) report.push_back(stats.report);
  auto gap = [&](uint64_t first, uint64_t last, const std::string& where) {
    ++stats.lsn_gaps;
    report.push_back(Range(first, last) + " missing" + where);
  };

  uint64_t expected = from_lsn;  // the LSN the next record should carry; 0 = not known yet
  for (size_t i = 0; i < segments.size(); ++i) {
    if (i + 1 < segments.size() && segments[i + 1].first_lsn <= from_lsn) continue;
    const std::string name = SegmentFileName(segments[i].first_lsn);
    Result<std::string> contents = fs_.ReadFile(SegmentPath(segments[i].first_lsn));
    if (!contents.ok()) return contents.status().WithContext("replaying WAL segment " + name);
    if (contents->empty()) continue;  // a placeholder left by recovery

    SegmentReader reader(*contents);
    Result<SegmentHeader> header = reader.ReadHeader();
    Status bad_header = header.status();
    if (bad_header.ok() && header->first_lsn != segments[i].first_lsn) {
      bad_header = Status::Corruption("header says first lsn " + std::to_string(header->first_lsn));
    }
    if (!bad_header.ok()) {
      ++stats.corrupt_records;
      report.push_back("segment " + name + ": " + bad_header.message() + "; segment skipped");
      continue;
    }
    bool reported_overlap = false;
    while (true) {
      Result<std::optional<RecordView>> next = reader.Next();
      if (!next.ok()) {
        ++stats.corrupt_records;
        report.push_back("segment " + name + ": " + next.status().message() +
                         "; skipped the rest of the segment (" +
                         std::to_string(contents->size() - reader.valid_end()) + " bytes)");
        break;
      }
      if (!next->has_value()) break;
      const RecordView& record = **next;
      if (record.lsn < from_lsn) continue;
      if (expected != 0 && record.lsn < expected) {
        // Segments overlap: cannot come from this writer. Keep the first copy.
        if (!reported_overlap) {
          report.push_back("segment " + name + ": " + Range(record.lsn, record.lsn) +
                           " already replayed from an earlier segment; skipped");
          reported_overlap = true;
        }
        continue;
      }
      if (expected != 0 && record.lsn > expected) {
        gap(expected, record.lsn - 1,
            " before segment " + name + " offset " + std::to_string(record.offset));
      }
      Status s = fn(record.lsn, record.payload);
      if (!s.ok()) return s.WithContext("replaying WAL record " + std::to_string(record.lsn));
      ++stats.records;
      stats.bytes += record.payload.size();
      if (stats.first_lsn == 0) stats.first_lsn = record.lsn;
      stats.last_lsn = record.lsn;
      expected = record.lsn + 1;
    }
  }
  if (expected != 0 && expected < next_lsn) gap(expected, next_lsn - 1, " at the end of the log");
  if (from_lsn > next_lsn) {
    ++stats.lsn_gaps;
    report.push_back("replay asked for records from lsn " + std::to_string(from_lsn) +
                     " but the log ends before lsn " + std::to_string(next_lsn));
  }
  stats.report = Join(report);
  return stats;
}

}  // namespace trainwatch::storage::wal
