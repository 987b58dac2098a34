#include "storage/chunk_store.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include "storage/binary_io.h"
#include "storage/store_internal.h"

namespace trainwatch::storage {
namespace {

using namespace store_internal;

constexpr uint8_t kRecordVersion = 1;

// RocksDB's informational log, warnings and errors only, to stderr (the server's log) rather than
// to a LOG file in the store's directory: on a full disk RocksDB's writer of that file fails, and
// Debian's RocksDB 7.8 (built with assertions) aborts the process on its next line.
class StderrInfoLog final : public rocksdb::Logger {
 public:
  StderrInfoLog() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    char line[1024];
    int n = std::vsnprintf(line, sizeof line, format, ap);
    if (n < 0) return;
    std::string out = "rocksdb: ";
    out.append(line, std::min<size_t>(static_cast<size_t>(n), sizeof line - 1));
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stderr);  // one write: lines do not interleave
  }
};

std::string SeriesKeyOf(SeriesId id) {
  std::string k = "s";
  PutBigEndian64(&k, id);
  return k;
}

std::string ChunkKeyOf(char prefix, SeriesId id, uint32_t chunk_no) {
  std::string k(1, prefix);
  PutBigEndian64(&k, id);
  PutBigEndian32(&k, chunk_no);
  return k;
}

// Version 2 of the series record: a rank's series (rank > 0) of a distributed run, with its rank
// after the metric. Run-level series keep version 1.
constexpr uint8_t kRankedSeriesVersion = 2;

std::string EncodeSeries(const SeriesRecord& s) {
  const bool ranked = s.key.rank > 0;
  std::string out(1, static_cast<char>(ranked ? kRankedSeriesVersion : kRecordVersion));
  PutFixed64(&out, s.id);
  PutLengthPrefixed(&out, s.key.project);
  PutLengthPrefixed(&out, s.key.run);
  PutLengthPrefixed(&out, s.key.metric);
  if (ranked) PutFixed32(&out, s.key.rank);
  PutFixed32(&out, s.gen);
  PutFixed32(&out, s.next_chunk_no);
  PutFixed64(&out, s.flushed_lsn);
  PutFixed32(&out, static_cast<uint32_t>(s.rewinds.size()));
  for (const Rewind& r : s.rewinds) {
    PutFixed32(&out, r.gen);
    PutFixed64(&out, static_cast<uint64_t>(r.step));
  }
  return out;
}

bool DecodeSeries(std::string_view data, SeriesRecord* s) {
  ByteReader in(data);
  uint8_t version;
  uint32_t n;
  if (!in.GetByte(&version) || (version != kRecordVersion && version != kRankedSeriesVersion))
    return false;
  if (!in.GetFixed64(&s->id) || !in.GetLengthPrefixed(&s->key.project) ||
      !in.GetLengthPrefixed(&s->key.run) || !in.GetLengthPrefixed(&s->key.metric)) {
    return false;
  }
  s->key.rank = 0;
  if (version == kRankedSeriesVersion && (!in.GetFixed32(&s->key.rank) || s->key.rank == 0))
    return false;
  if (!in.GetFixed32(&s->gen) || !in.GetFixed32(&s->next_chunk_no) ||
      !in.GetFixed64(&s->flushed_lsn) || !in.GetFixed32(&n)) {
    return false;
  }
  s->rewinds.resize(n);
  for (Rewind& r : s->rewinds) {
    if (!in.GetFixed32(&r.gen) || !in.GetInt64(&r.step)) return false;
  }
  return in.empty();
}

std::string EncodeChunkHeader(const ChunkRef& c) {
  std::string out(1, static_cast<char>(kRecordVersion));
  PutFixed32(&out, c.gen);
  out.push_back(static_cast<char>((c.superseded ? 1 : 0) | (c.times_from_clock ? 2 : 0)));
  PutFixed64(&out, c.encoded_bytes);
  const Summary& s = c.summary;
  PutFixed64(&out, s.count);
  PutFixed64(&out, s.nan_count);
  PutDouble(&out, s.min);
  PutDouble(&out, s.max);
  PutDouble(&out, s.first);
  PutDouble(&out, s.last);
  PutDouble(&out, s.sum);
  PutFixed64(&out, static_cast<uint64_t>(s.first_step));
  PutFixed64(&out, static_cast<uint64_t>(s.last_step));
  PutDouble(&out, s.min_time);
  PutDouble(&out, s.max_time);
  return out;
}

bool DecodeChunkHeader(std::string_view data, ChunkRef* c) {
  ByteReader in(data);
  uint8_t version = 0, flags = 0;
  Summary& s = c->summary;
  bool ok = in.GetByte(&version) && version == kRecordVersion && in.GetFixed32(&c->gen) &&
            in.GetByte(&flags) && in.GetFixed64(&c->encoded_bytes) && in.GetFixed64(&s.count) &&
            in.GetFixed64(&s.nan_count) && in.GetDouble(&s.min) && in.GetDouble(&s.max) &&
            in.GetDouble(&s.first) && in.GetDouble(&s.last) && in.GetDouble(&s.sum) &&
            in.GetInt64(&s.first_step) && in.GetInt64(&s.last_step) && in.GetDouble(&s.min_time) &&
            in.GetDouble(&s.max_time) && in.empty();
  c->superseded = (flags & 1) != 0;
  c->times_from_clock = (flags & 2) != 0;
  return ok;
}

}  // namespace

ChunkStore::ChunkStore(std::unique_ptr<StoreDb> db)
    : db_(std::move(db)), runs_(*db_), blobs_(*db_), writers_(*db_), checkpoint_(*db_) {
  for (StepEntryType type : kAllStepEntryTypes) {
    const StepEntryKind& kind = KindOf(type);
    entries_[static_cast<size_t>(type)] =
        std::make_unique<StepEntryStore>(*db_, kind, kind.holds_references ? &blobs_ : nullptr);
  }
}
ChunkStore::~ChunkStore() = default;

Result<std::unique_ptr<ChunkStore>> ChunkStore::Open(const std::string& dir,
                                                     const ChunkStoreOptions& store_options) {
  rocksdb::Options options;
  if (store_options.env != nullptr) options.env = store_options.env;
  if (store_options.write_buffer_bytes > 0)
    options.write_buffer_size = store_options.write_buffer_bytes;
  options.create_if_missing = true;
  options.compression = rocksdb::kNoCompression;  // chunks are compressed by their own codec
  options.max_background_jobs = 2;
  options.max_open_files = 512;
  options.info_log = std::make_shared<StderrInfoLog>();
  // A failed write is recovered by the engine, on its clock (Resume), not by RocksDB's own
  // threads (StoreDb's listener turns them off too).
  options.max_bgerror_resume_count = 0;
  TW_ASSIGN_OR_RETURN(std::unique_ptr<StoreDb> db, StoreDb::Open(dir, std::move(options)));
  return std::unique_ptr<ChunkStore>(new ChunkStore(std::move(db)));
}

Status ChunkStore::Resume() { return db_->Recover().WithContext("recovering store"); }

uint64_t ChunkStore::Reopens() const { return db_->Reopens(); }

Status ChunkStore::PutSeal(const SeriesRecord& series, const std::vector<StoredChunk>& chunks,
                           const std::vector<std::string>& encoded) {
  rocksdb::WriteBatch batch;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const StoredChunk& c = chunks[i];
    batch.Put(ChunkKeyOf('c', c.series_id, c.ref.chunk_no), EncodeChunkHeader(c.ref));
    batch.Put(ChunkKeyOf('d', c.series_id, c.ref.chunk_no), encoded[i]);
  }
  batch.Put(SeriesKeyOf(series.id), EncodeSeries(series));
  return db_->Write(&batch, "writing sealed chunks");
}

Status ChunkStore::PutSeries(const SeriesRecord& series) {
  return db_->Put(SeriesKeyOf(series.id), EncodeSeries(series), "writing series record");
}

Status ChunkStore::DeleteChunks(const SeriesRecord& series,
                                const std::vector<uint32_t>& chunk_nos) {
  rocksdb::WriteBatch batch;
  for (uint32_t no : chunk_nos) {
    batch.Delete(ChunkKeyOf('c', series.id, no));
    batch.Delete(ChunkKeyOf('d', series.id, no));
  }
  batch.Put(SeriesKeyOf(series.id), EncodeSeries(series));
  return db_->Write(&batch, "deleting chunks");
}

Status ChunkStore::DeleteSeries(SeriesId id) {
  rocksdb::WriteBatch batch;
  std::string from_c(1, 'c'), from_d(1, 'd');
  PutBigEndian64(&from_c, id);
  PutBigEndian64(&from_d, id);
  std::string to_c(1, 'c'), to_d(1, 'd');
  PutBigEndian64(&to_c, id + 1);
  PutBigEndian64(&to_d, id + 1);
  batch.DeleteRange(from_c, to_c);
  batch.DeleteRange(from_d, to_d);
  batch.Delete(SeriesKeyOf(id));
  return db_->Write(&batch, "deleting series");
}

Status ChunkStore::DeleteRun(const std::string& project, const std::string& run) {
  rocksdb::WriteBatch batch;
  for (const auto& entries : entries_) {
    if (!entries->kind().holds_references) entries->AddRunDeletion(project, run, &batch);
  }
  runs_.AddRunDeletion(project, run, &batch);
  return db_->Write(&batch, "deleting run");
}

Result<std::string> ChunkStore::GetChunk(SeriesId id, uint32_t chunk_no) const {
  std::string value;
  bool found = false;
  TW_RETURN_IF_ERROR(db_->Get(ChunkKeyOf('d', id, chunk_no), &value, &found, "reading chunk"));
  if (!found) {
    return Status::NotFound("chunk " + std::to_string(chunk_no) + " of series " +
                            std::to_string(id));
  }
  return value;
}

Status ChunkStore::ForEachSeries(const std::function<Status(SeriesRecord)>& fn) const {
  return ForEachPrefixed(*db_, "s", [&](std::string_view key, std::string_view value) {
    SeriesRecord record;
    if (!DecodeSeries(value, &record)) return Status::Corruption("bad series record");
    return fn(std::move(record));
  });
}

Status ChunkStore::ForEachChunk(const std::function<Status(StoredChunk)>& fn) const {
  return ForEachPrefixed(*db_, "c", [&](std::string_view key, std::string_view value) {
    if (key.size() != 13) return Status::Corruption("bad chunk key");
    StoredChunk chunk;
    chunk.series_id = DecodeBigEndian64(key.data() + 1);
    chunk.ref.chunk_no = DecodeBigEndian32(key.data() + 9);
    if (!DecodeChunkHeader(value, &chunk.ref)) {
      return Status::Corruption("bad chunk header for series " + std::to_string(chunk.series_id));
    }
    return fn(std::move(chunk));
  });
}

Status ChunkStore::Sync() {
  return db_->With(
      [](rocksdb::DB& db) { return FromRocks(db.FlushWAL(/*sync=*/true), "syncing store"); });
}

uint64_t ChunkStore::DiskBytes() const {
  uint64_t sst = 0, wal = 0;
  (void)db_->With([&](rocksdb::DB& db) {
    db.GetIntProperty("rocksdb.total-sst-files-size", &sst);
    db.GetIntProperty("rocksdb.cur-size-all-mem-tables", &wal);
    return Status::Ok();
  });
  return sst + wal;
}

Status ChunkStore::CreateCheckpoint(const std::string& dir) {
  return db_->With([&](rocksdb::DB& db) {
    rocksdb::Checkpoint* raw = nullptr;
    TW_RETURN_IF_ERROR(FromRocks(rocksdb::Checkpoint::Create(&db, &raw), "store checkpoint"));
    std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
    // log_size_for_flush 0: the memtables are flushed first, so the copy needs no RocksDB log.
    return FromRocks(checkpoint->CreateCheckpoint(dir, /*log_size_for_flush=*/0),
                     "store checkpoint into " + dir);
  });
}

Status ChunkStore::CompactAll() {
  return db_->With([](rocksdb::DB& db) {
    TW_RETURN_IF_ERROR(FromRocks(db.Flush(rocksdb::FlushOptions()), "flushing store"));
    return FromRocks(db.CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr),
                     "compacting store");
  });
}

}  // namespace trainwatch::storage
