#include "storage/chunk_store.h"

#include <algorithm>

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include "storage/binary_io.h"
#include "storage/store_internal.h"

namespace trainwatch::storage {
namespace store_internal {

constexpr uint8_t kRecordVersion = 1;

Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  if (s.IsCorruption()) return Status::Corruption(std::string(what) + ": " + s.ToString());
  if (s.IsNoSpace()) return Status::ResourceExhausted(std::string(what) + ": " + s.ToString());
  return Status::IoError(std::string(what) + ": " + s.ToString());
}

std::string RunKeyOf(char prefix, const std::string& project, const std::string& run) {
  std::string k(1, prefix);
  k += project;
  k.push_back('\0');
  k += run;
  return k;
}

std::string NameKeyOf(char prefix, const SeriesKey& key) {
  std::string k = RunKeyOf(prefix, key.project, key.run);
  k.push_back('\0');
  k += key.metric;
  return k;
}

std::pair<std::string, std::string> RunRangeOf(char prefix, const std::string& project,
                                               const std::string& run) {
  std::string from = RunKeyOf(prefix, project, run), to = from;
  from.push_back('\0');
  to.push_back('\1');
  return {std::move(from), std::move(to)};
}

std::string EncodeNameSummary(const HistogramSeriesInfo& info) {
  std::string out(1, static_cast<char>(kRecordVersion));
  PutFixed64(&out, info.count);
  PutFixed64(&out, static_cast<uint64_t>(info.first_step));
  PutFixed64(&out, static_cast<uint64_t>(info.last_step));
  PutDouble(&out, info.min_time);
  return out;
}

bool DecodeNameSummary(std::string_view data, HistogramSeriesInfo* info) {
  ByteReader in(data);
  uint8_t version = 0;
  return in.GetByte(&version) && version == kRecordVersion && in.GetFixed64(&info->count) &&
         in.GetInt64(&info->first_step) && in.GetInt64(&info->last_step) &&
         in.GetDouble(&info->min_time) && in.empty();
}

Status ForEachPrefixed(rocksdb::DB& db, std::string_view prefix,
                       const std::function<Status(std::string_view, std::string_view)>& fn) {
  std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(rocksdb::Slice(prefix.data(), prefix.size())); it->Valid(); it->Next()) {
    std::string_view key(it->key().data(), it->key().size());
    if (!key.starts_with(prefix)) break;
    TW_RETURN_IF_ERROR(fn(key, std::string_view(it->value().data(), it->value().size())));
  }
  return FromRocks(it->status(), "iterating store");
}

Status ForEachNameSummary(rocksdb::DB& db, char prefix,
                          const std::function<Status(SeriesKey, HistogramSeriesInfo)>& fn) {
  const std::string kind(1, prefix);
  return ForEachPrefixed(db, kind, [&](std::string_view key, std::string_view value) {
    key.remove_prefix(1);
    size_t nul1 = key.find('\0');
    size_t nul2 = nul1 == std::string_view::npos ? nul1 : key.find('\0', nul1 + 1);
    if (nul2 == std::string_view::npos) return Status::Corruption("bad '" + kind + "' summary key");
    SeriesKey series{std::string(key.substr(0, nul1)),
                     std::string(key.substr(nul1 + 1, nul2 - nul1 - 1)),
                     std::string(key.substr(nul2 + 1))};
    HistogramSeriesInfo info;
    if (!DecodeNameSummary(value, &info)) {
      return Status::Corruption("bad '" + kind + "' summary of " + series.project + "/" +
                                series.run + "/" + series.metric);
    }
    return fn(std::move(series), info);
  });
}

}  // namespace store_internal

namespace {

using namespace store_internal;

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

std::string RunKeyOf(const std::string& project, const std::string& run) {
  return store_internal::RunKeyOf('r', project, run);
}

std::string HistogramKeyOf(const SeriesKey& key, int64_t step) {
  std::string k = NameKeyOf('h', key);
  k.push_back('\0');
  PutBigEndian64(&k, static_cast<uint64_t>(step));  // steps are >= 0: sorts numerically
  return k;
}

std::string EncodeSeries(const SeriesRecord& s) {
  std::string out(1, static_cast<char>(kRecordVersion));
  PutFixed64(&out, s.id);
  PutLengthPrefixed(&out, s.key.project);
  PutLengthPrefixed(&out, s.key.run);
  PutLengthPrefixed(&out, s.key.metric);
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
  if (!in.GetByte(&version) || version != kRecordVersion) return false;
  if (!in.GetFixed64(&s->id) || !in.GetLengthPrefixed(&s->key.project) ||
      !in.GetLengthPrefixed(&s->key.run) || !in.GetLengthPrefixed(&s->key.metric) ||
      !in.GetFixed32(&s->gen) || !in.GetFixed32(&s->next_chunk_no) ||
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
            in.GetByte(&flags) && in.GetFixed64(&c->encoded_bytes) &&
            in.GetFixed64(&s.count) && in.GetFixed64(&s.nan_count) && in.GetDouble(&s.min) &&
            in.GetDouble(&s.max) && in.GetDouble(&s.first) && in.GetDouble(&s.last) &&
            in.GetDouble(&s.sum) && in.GetInt64(&s.first_step) && in.GetInt64(&s.last_step) &&
            in.GetDouble(&s.min_time) && in.GetDouble(&s.max_time) && in.empty();
  c->superseded = (flags & 1) != 0;
  c->times_from_clock = (flags & 2) != 0;
  return ok;
}

}  // namespace

ChunkStore::ChunkStore(std::unique_ptr<rocksdb::DB> db) : db_(std::move(db)) {}
ChunkStore::~ChunkStore() = default;

Result<std::unique_ptr<ChunkStore>> ChunkStore::Open(const std::string& dir) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.compression = rocksdb::kNoCompression;  // chunks are compressed by their own codec
  options.max_background_jobs = 2;
  options.keep_log_file_num = 3;
  options.max_open_files = 512;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, &raw);
  if (!s.ok()) return FromRocks(s, "opening store " + dir);
  return std::unique_ptr<ChunkStore>(new ChunkStore(std::unique_ptr<rocksdb::DB>(raw)));
}

Status ChunkStore::PutSeal(const SeriesRecord& series, const std::vector<StoredChunk>& chunks,
                           const std::vector<std::string>& encoded) {
  rocksdb::WriteBatch batch;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const StoredChunk& c = chunks[i];
    batch.Put(ChunkKeyOf('c', c.series_id, c.ref.chunk_no), EncodeChunkHeader(c.ref));
    batch.Put(ChunkKeyOf('d', c.series_id, c.ref.chunk_no), encoded[i]);
  }
  batch.Put(SeriesKeyOf(series.id), EncodeSeries(series));
  return FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "writing sealed chunks");
}

Status ChunkStore::PutSeries(const SeriesRecord& series) {
  return FromRocks(db_->Put(rocksdb::WriteOptions(), SeriesKeyOf(series.id), EncodeSeries(series)),
                   "writing series record");
}

Status ChunkStore::PutRun(const std::string& project, const std::string& run,
                          const std::string& json) {
  return FromRocks(db_->Put(rocksdb::WriteOptions(), RunKeyOf(project, run), json),
                   "writing run metadata");
}

Status ChunkStore::PutWriterSequence(const std::string& writer_id, uint64_t sequence) {
  std::string value;
  PutFixed64(&value, sequence);
  return FromRocks(db_->Put(rocksdb::WriteOptions(), "w" + writer_id, value), "writing sequence");
}

Status ChunkStore::PutCheckpointLsn(uint64_t lsn) {
  std::string value;
  PutFixed64(&value, lsn);
  rocksdb::WriteOptions options;
  options.sync = true;
  return FromRocks(db_->Put(options, "m", value), "writing checkpoint");
}

Status ChunkStore::DeleteChunks(const SeriesRecord& series, const std::vector<uint32_t>& chunk_nos) {
  rocksdb::WriteBatch batch;
  for (uint32_t no : chunk_nos) {
    batch.Delete(ChunkKeyOf('c', series.id, no));
    batch.Delete(ChunkKeyOf('d', series.id, no));
  }
  batch.Put(SeriesKeyOf(series.id), EncodeSeries(series));
  return FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "deleting chunks");
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
  return FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "deleting series");
}

Status ChunkStore::DeleteRun(const std::string& project, const std::string& run) {
  rocksdb::WriteBatch batch;
  // Images ("i", "I") are not in these ranges: their blobs' references are released first,
  // tag by tag (DeleteImages).
  for (char prefix : {'h', 'H', 't', 'T'}) {
    auto [from, to] = RunRangeOf(prefix, project, run);
    batch.DeleteRange(from, to);
  }
  batch.Delete(RunKeyOf('g', project, run));
  batch.Delete(RunKeyOf(project, run));
  return FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "deleting run");
}

Status ChunkStore::PutGraph(const std::string& project, const std::string& run,
                            std::string_view json) {
  return FromRocks(db_->Put(rocksdb::WriteOptions(), RunKeyOf('g', project, run),
                            rocksdb::Slice(json.data(), json.size())),
                   "writing graph");
}

Result<std::string> ChunkStore::GetGraph(const std::string& project, const std::string& run) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), RunKeyOf('g', project, run), &value);
  if (s.IsNotFound()) return Status::NotFound("run '" + run + "' has no graph");
  TW_RETURN_IF_ERROR(FromRocks(s, "reading graph"));
  return value;
}

Status ChunkStore::PutHistogram(const SeriesKey& key, int64_t step, std::string_view encoded,
                                const HistogramSeriesInfo& info) {
  rocksdb::WriteBatch batch;
  batch.Put(HistogramKeyOf(key, step), rocksdb::Slice(encoded.data(), encoded.size()));
  batch.Put(NameKeyOf('H', key), EncodeNameSummary(info));
  return FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "writing histogram");
}

Result<bool> ChunkStore::HasHistogram(const SeriesKey& key, int64_t step) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), HistogramKeyOf(key, step), &value);
  if (s.IsNotFound()) return false;
  TW_RETURN_IF_ERROR(FromRocks(s, "reading histogram"));
  return true;
}

Status ChunkStore::ScanHistograms(
    const SeriesKey& key, int64_t from, int64_t to,
    const std::function<bool(int64_t, std::string_view)>& fn) const {
  if (to < from || to < 0) return Status::Ok();
  std::string prefix = NameKeyOf('h', key);
  prefix.push_back('\0');
  std::string start = HistogramKeyOf(key, std::max<int64_t>(from, 0));
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(start); it->Valid(); it->Next()) {
    std::string_view k(it->key().data(), it->key().size());
    if (!k.starts_with(prefix)) break;
    if (k.size() != prefix.size() + 8) return Status::Corruption("bad histogram key");
    const auto step = static_cast<int64_t>(DecodeBigEndian64(k.data() + prefix.size()));
    if (step > to) break;
    if (!fn(step, std::string_view(it->value().data(), it->value().size()))) break;
  }
  return FromRocks(it->status(), "reading histograms");
}

Status ChunkStore::DeleteHistograms(const SeriesKey& key, const std::vector<int64_t>& steps,
                                    const HistogramSeriesInfo& info) {
  rocksdb::WriteBatch batch;
  for (int64_t step : steps) batch.Delete(HistogramKeyOf(key, step));
  if (info.count == 0) {
    batch.Delete(NameKeyOf('H', key));
  } else {
    batch.Put(NameKeyOf('H', key), EncodeNameSummary(info));
  }
  return FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "deleting histograms");
}

Result<std::string> ChunkStore::GetChunk(SeriesId id, uint32_t chunk_no) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), ChunkKeyOf('d', id, chunk_no), &value);
  if (s.IsNotFound()) {
    return Status::NotFound("chunk " + std::to_string(chunk_no) + " of series " + std::to_string(id));
  }
  TW_RETURN_IF_ERROR(FromRocks(s, "reading chunk"));
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

Status ChunkStore::ForEachRun(
    const std::function<Status(std::string, std::string, std::string)>& fn) const {
  return ForEachPrefixed(*db_, "r", [&](std::string_view key, std::string_view value) {
    key.remove_prefix(1);
    size_t nul = key.find('\0');
    if (nul == std::string_view::npos) return Status::Corruption("bad run key");
    return fn(std::string(key.substr(0, nul)), std::string(key.substr(nul + 1)), std::string(value));
  });
}

Status ChunkStore::ForEachWriter(const std::function<Status(std::string, uint64_t)>& fn) const {
  return ForEachPrefixed(*db_, "w", [&](std::string_view key, std::string_view value) {
    uint64_t seq;
    ByteReader in(value);
    if (!in.GetFixed64(&seq)) return Status::Corruption("bad writer record");
    return fn(std::string(key.substr(1)), seq);
  });
}

Status ChunkStore::ForEachHistogramSeries(
    const std::function<Status(SeriesKey, HistogramSeriesInfo)>& fn) const {
  return ForEachNameSummary(*db_, 'H', fn);
}

Result<uint64_t> ChunkStore::GetCheckpointLsn() const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), "m", &value);
  if (s.IsNotFound()) return uint64_t{0};
  TW_RETURN_IF_ERROR(FromRocks(s, "reading checkpoint"));
  uint64_t lsn;
  ByteReader in(value);
  if (!in.GetFixed64(&lsn)) return Status::Corruption("bad checkpoint record");
  return lsn;
}

Status ChunkStore::Sync() { return FromRocks(db_->FlushWAL(/*sync=*/true), "syncing store"); }

uint64_t ChunkStore::DiskBytes() const {
  uint64_t sst = 0, wal = 0;
  db_->GetIntProperty("rocksdb.total-sst-files-size", &sst);
  db_->GetIntProperty("rocksdb.cur-size-all-mem-tables", &wal);
  return sst + wal;
}

Status ChunkStore::CompactAll() {
  TW_RETURN_IF_ERROR(FromRocks(db_->Flush(rocksdb::FlushOptions()), "flushing store"));
  return FromRocks(db_->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr),
                   "compacting store");
}

}  // namespace trainwatch::storage
