// ChunkStore: the persistent home of sealed chunks, series metadata, run metadata and writer
// sequence numbers, in one RocksDB database. Key layout (docs/format/store.md):
//   "c" series_id(be64) chunk_no(be32)  -> chunk header (ChunkRef fields and summary)
//   "d" series_id(be64) chunk_no(be32)  -> encoded chunk (docs/format/chunk.md)
//   "s" series_id(be64)                 -> series record (key, generation, rewinds, flushed LSN)
//   "r" project "\0" run                -> run metadata (JSON)
//   "g" project "\0" run                -> the run's model graph (JSON)
//   "h" project "\0" run "\0" name "\0" step(be64) -> one histogram (storage/histogram.h)
//   "H" project "\0" run "\0" name     -> summary of a run's histograms of that name
//   "i" project "\0" run "\0" tag "\0" step(be64) index(be32) -> one image entry (storage/media.h)
//   "I" project "\0" run "\0" tag      -> summary of a run's images of that tag
//   "b" sha256                          -> encoded image bytes (a blob), once per content
//   "B" sha256                          -> the blob's reference count and size
//   "t" project "\0" run "\0" tag "\0" step(be64) -> one text
//   "T" project "\0" run "\0" tag      -> summary of a run's texts of that tag
//   "w" writer_id                       -> last applied sequence (u64)
//   "m"                                 -> store record (checkpoint LSN)
// Writes are not synced one by one; Sync() makes everything written so far durable, and the engine
// calls it before the write-ahead log forgets anything. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "storage/histogram.h"
#include "storage/media.h"
#include "storage/series.h"

namespace rocksdb {
class DB;
}

namespace trainwatch::storage {

struct SeriesRecord {
  SeriesId id = 0;
  SeriesKey key;
  uint32_t gen = 0;
  uint32_t next_chunk_no = 0;
  uint64_t flushed_lsn = 0;
  std::vector<Rewind> rewinds;
};

// A chunk's header as stored, without the encoded points.
struct StoredChunk {
  SeriesId series_id = 0;
  ChunkRef ref;  // points unset
};

class ChunkStore {
 public:
  static Result<std::unique_ptr<ChunkStore>> Open(const std::string& dir);
  ~ChunkStore();
  ChunkStore(const ChunkStore&) = delete;
  ChunkStore& operator=(const ChunkStore&) = delete;

  // Atomically stores chunks (with their encoded bytes) and the series record that covers them.
  Status PutSeal(const SeriesRecord& series, const std::vector<StoredChunk>& chunks,
                 const std::vector<std::string>& encoded);
  Status PutSeries(const SeriesRecord& series);
  Status PutRun(const std::string& project, const std::string& run, const std::string& json);
  Status PutWriterSequence(const std::string& writer_id, uint64_t sequence);
  Status PutCheckpointLsn(uint64_t lsn);
  // Deletes the given chunks of a series and rewrites its record (retention).
  Status DeleteChunks(const SeriesRecord& series, const std::vector<uint32_t>& chunk_nos);
  Status DeleteSeries(SeriesId id);
  // Deletes a run's metadata, graph, histograms and texts; its images go first, by DeleteImages.
  Status DeleteRun(const std::string& project, const std::string& run);

  // --- graphs ("g") ---
  Status PutGraph(const std::string& project, const std::string& run, std::string_view json);
  // NotFound if the run has no graph.
  Result<std::string> GetGraph(const std::string& project, const std::string& run) const;

  // --- histograms ("h", "H"); `key.metric` is the histogram's name ---
  // Atomically stores one encoded histogram (replacing the one at the same step) and the summary
  // of its name.
  Status PutHistogram(const SeriesKey& key, int64_t step, std::string_view encoded,
                      const HistogramSeriesInfo& info);
  Result<bool> HasHistogram(const SeriesKey& key, int64_t step) const;
  // Calls fn(step, encoded) for the histograms of `key` with from <= step <= to, by step; stops
  // early (OK) when fn returns false.
  Status ScanHistograms(const SeriesKey& key, int64_t from, int64_t to,
                        const std::function<bool(int64_t step, std::string_view encoded)>& fn) const;
  // Atomically deletes the given steps of `key` and stores its new summary (none when
  // info.count == 0).
  Status DeleteHistograms(const SeriesKey& key, const std::vector<int64_t>& steps,
                          const HistogramSeriesInfo& info);

  // --- images ("i", "I", "b", "B") and texts ("t", "T"); `tag.metric` is the tag ---
  // The image writes (PutImage, DeleteImagesOlderThan) read the reference counts they rewrite:
  // callers serialise them. Each is one atomic RocksDB batch, so the counts always equal the
  // number of "i" entries that refer to each blob, whatever point a crash stops at.
  //
  // Stores an image entry at (tag, entry.step, entry.index), replacing the one there, with its
  // tag's summary: the blob `bytes` (whose SHA-256 is entry.sha256) is stored unless present and
  // gains a reference; a replaced entry's blob loses one and goes with its last. Writing the same
  // entry again changes nothing else. Returns the tag's new summary, and adds the change of the
  // blob totals to *change.
  Result<TagSummary> PutImage(const SeriesKey& tag, const ImageEntry& entry, std::string_view bytes,
                              BlobChange* change);
  // Deletes the image entries of a tag whose time is below `cutoff` (every one with +infinity),
  // releasing their blobs, and rewrites the tag's summary exactly (deletes it with the last entry).
  // Returns how many were deleted; *kept is the new summary; the blob totals' change is added to
  // *change.
  Result<uint64_t> DeleteImagesOlderThan(const SeriesKey& tag, double cutoff, TagSummary* kept,
                                         BlobChange* change);
  // Calls fn for the image entries of a tag with from <= step <= to, by (step, index); stops early
  // (OK) when fn returns false.
  Status ScanImages(const SeriesKey& tag, int64_t from, int64_t to,
                    const std::function<bool(ImageEntry)>& fn) const;
  // The bytes of a blob. NotFound when no entry refers to it.
  Result<std::string> GetBlob(std::string_view sha256) const;
  Result<bool> HasBlob(std::string_view sha256) const;
  // The number and total size of the stored blobs (a scan of "B", for start-up).
  Result<BlobChange> CountBlobs() const;

  // Stores a text at (tag, entry.step), replacing the one there, with its tag's summary. Returns
  // the new summary.
  Result<TagSummary> PutText(const SeriesKey& tag, const TextEntry& entry);
  // As DeleteImagesOlderThan, for texts.
  Result<uint64_t> DeleteTextsOlderThan(const SeriesKey& tag, double cutoff, TagSummary* kept);
  Status ScanTexts(const SeriesKey& tag, int64_t from, int64_t to,
                   const std::function<bool(TextEntry)>& fn) const;

  // The encoded points of one chunk.
  Result<std::string> GetChunk(SeriesId id, uint32_t chunk_no) const;

  // Start-up loading: calls fn for every record of a kind, in key order.
  Status ForEachSeries(const std::function<Status(SeriesRecord)>& fn) const;
  Status ForEachChunk(const std::function<Status(StoredChunk)>& fn) const;
  Status ForEachRun(const std::function<Status(std::string project, std::string run,
                                               std::string json)>& fn) const;
  Status ForEachWriter(const std::function<Status(std::string writer, uint64_t seq)>& fn) const;
  Status ForEachHistogramSeries(
      const std::function<Status(SeriesKey key, HistogramSeriesInfo info)>& fn) const;
  Status ForEachImageTag(const std::function<Status(SeriesKey tag, TagSummary info)>& fn) const;
  Status ForEachTextTag(const std::function<Status(SeriesKey tag, TagSummary info)>& fn) const;
  Result<uint64_t> GetCheckpointLsn() const;

  // Makes every write so far durable.
  Status Sync();
  // Bytes of the database files on disk (live SST + memtables' WAL).
  uint64_t DiskBytes() const;
  // Compacts everything (benchmarks measure the settled size).
  Status CompactAll();

 private:
  explicit ChunkStore(std::unique_ptr<rocksdb::DB> db);
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace trainwatch::storage
