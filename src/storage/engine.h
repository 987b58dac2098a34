// Engine: the embedded metric store. It consumes the LOG — every record is appended durably, then
// applied to memory in LSN order, then acknowledged — keeps each series' newest points in an
// in-memory head, seals full heads into encoded chunks in the ChunkStore on a background thread,
// and answers reads over heads and chunks alike.
//
// Recovery: Open loads the store (series, chunk headers, runs, writer sequences) and replays the
// log from the last checkpoint; a record already covered by a series' persisted chunks (lsn <=
// flushed_lsn) is skipped for that series, so replay applies each point exactly once.
//
// Thread-safety: every public method is thread-safe. Records are applied one at a time, on the
// log's callback thread; reads run concurrently with it under per-series shared locks.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "common/mutex.h"
#include "common/status.h"
#include "storage/chunk_cache.h"
#include "storage/chunk_store.h"
#include "storage/histogram.h"
#include "storage/log.h"
#include "storage/media.h"
#include "storage/run_info.h"
#include "storage/series.h"
#include "storage/series_scan.h"
#include "storage/step_entry.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::storage {

// The first byte of every log record says what follows; 1 = a serialised v1::WriteRequest.
inline constexpr char kWriteRecordType = 1;

struct EngineOptions {
  // A head is sealed into a chunk once it holds this many points (checked after each record); a
  // longer head is cut into equal chunks of at least this many (less than twice as many) points.
  // At most kMaxChunkPoints / 2.
  size_t chunk_points = 1024;
  uint64_t chunk_cache_bytes = 256ull << 20;
  // A checkpoint (seal every head, sync the store, let the log drop old segments) runs once the log
  // has grown this much since the last one, and at shutdown.
  uint64_t checkpoint_log_bytes = 512ull << 20;
  // ... and at least this often while anything is being written: bounds the log replayed after a
  // crash and the memory idle heads hold.
  double checkpoint_interval_seconds = 300;
  // A seal the store refused (a full disk, EIO) is retried this often, on the engine's clock,
  // until it is taken; writes go on meanwhile (to the log and memory).
  double store_retry_seconds = 1;
};

// What applying one write did.
struct WriteOutcome {
  uint64_t lsn = 0;
  uint64_t points_written = 0;    // appended, filled in, or starting a new timeline
  uint64_t points_unchanged = 0;  // identical to what the step already held
  uint64_t rewinds = 0;
  uint64_t series_rewound = 0;   // series a run rewind (RunMetadata.rewind_step) cut
  bool duplicate_batch = false;  // (writer_id, sequence) had been applied before
};

struct MetricInfo {
  std::string name;
  std::string kind = "scalar";
  uint64_t count = 0;  // visible points
  int64_t first_step = 0;
  int64_t last_step = 0;
  bool has_latest = false;
  Point latest;
  uint32_t timelines = 1;  // 1 + rewinds
};

// A run's liveness fields (what the liveness monitor needs, without copying the whole RunInfo).
struct RunLiveness {
  RunKey key;
  RunStatus status = RunStatus::kRunning;
  double last_heartbeat = 0;
  double heartbeat_interval = 0;
};

struct HistogramReadOptions {
  int64_t from_step = 0;
  int64_t to_step = std::numeric_limits<int64_t>::max();
  size_t limit = std::numeric_limits<size_t>::max();  // at most this many, the lowest steps first
};

struct SeriesReadOptions {
  int64_t from_step = std::numeric_limits<int64_t>::min();
  int64_t to_step = std::numeric_limits<int64_t>::max();
  // At most this many points, the first by step (0: all). A read cut short says where the rest
  // starts, and holds no more than max_points and one chunk in memory however large the range.
  size_t max_points = 0;
};

// A superseded point and the generation it belonged to.
struct SupersededPoint {
  Point point;
  uint32_t gen = 0;
};

class Engine {
 public:
  // Called after each record is applied, on the applier thread; must not block.
  using CommitListener = std::function<void(const v1::WriteRequest&, const WriteOutcome&)>;
  using WriteCallback = std::function<void(const Status&, const WriteOutcome&)>;

  // `log` is owned; `clock`, `logger` and `metrics` must outlive the engine.
  static Result<std::unique_ptr<Engine>> Open(const EngineOptions& options,
                                              std::unique_ptr<Log> log,
                                              std::unique_ptr<ChunkStore> store, Clock& clock,
                                              Logger& logger, MetricsRegistry& metrics);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Appends a validated, normalised request (every run batch has its project, times filled in) to
  // the log, applies it, then calls `done` — on the log's thread — with what it did.
  void Write(v1::WriteRequest request, WriteCallback done);
  // True if (writer_id, sequence) is already applied (a retried batch).
  bool IsDuplicate(const std::string& writer_id, uint64_t sequence) const;

  void SetCommitListener(CommitListener listener);
  // Told of each run DeleteRun removed (the disk guard), after its data is gone, on the deleting
  // thread; for what is kept beside the store (a run's stored report). Set before use.
  void SetRunDeletedListener(std::function<void(const RunKey&)> listener) {
    run_deleted_ = std::move(listener);
  }

  // Seals every head, persists, syncs the store and lets the log drop what it no longer needs.
  Status Checkpoint();
  // Checkpoints and stops; later writes fail with Unavailable.
  Status Close();
  // Checkpoints, then writes a copy of the store into `dir` (ChunkStore::CreateCheckpoint): the
  // copy holds every record applied before the call, sealed, with the writer sequences and the
  // checkpoint LSN that cover them, and needs no write-ahead log. Records applied meanwhile may
  // be in it in part: a caller that needs a copy matching its writer sequences makes no writes
  // until it returns (cluster snapshots, docs/cluster.md).
  Status SnapshotStore(const std::string& dir);

  // --- reads ---
  std::vector<RunInfo> ListRuns() const;
  std::optional<RunInfo> GetRun(const std::string& project, const std::string& run) const;
  // A run's scalar metrics (kind "scalar"), histogram names (kind "histogram") and image and text
  // tags (kinds "image", "text"; these three with count, first and last step only), by name.
  std::vector<MetricInfo> ListMetrics(const std::string& project, const std::string& run) const;
  // Runs that have recorded a heartbeat interval (writers that send heartbeats).
  std::vector<RunLiveness> ListHeartbeatRuns() const;
  // For each run (in order; empty for an unknown run), the newest visible point of each named
  // metric the run has, in the order asked.
  std::vector<std::vector<std::pair<std::string, Point>>> LatestValues(
      const std::vector<RunKey>& runs, const std::vector<std::string>& metrics) const;
  size_t SeriesCount() const;
  size_t SeriesCountInProject(const std::string& project) const;
  size_t MetricCountInRun(const std::string& project, const std::string& run) const;
  // A series of that (project, run, metric, rank). With rank 0 and no run-level series, true if
  // any rank of the run has the metric (the metric's name exists in the run).
  bool SeriesExists(const SeriesKey& key) const;
  // --- distributed runs (docs/distributed.md) ---
  // The ranks table of a run, by rank; empty for an unknown run or one that is not distributed.
  std::vector<RankState> ListRanks(const std::string& project, const std::string& run) const;
  // The ranks that have a series of key.metric in key's run (key.rank ignored), ascending: 0 for
  // the run-level series. Empty if none.
  std::vector<uint32_t> MetricRanks(const SeriesKey& key) const;

  // Visible points of a series in [from_step, to_step], by step. NotFound if no such series.
  // With options.max_points, *next_step (when given) is set to the step the points left out start
  // at, or reset when none were.
  Status ReadSeries(const SeriesKey& key, const SeriesReadOptions& options, std::vector<Point>* out,
                    std::optional<int64_t>* next_step = nullptr) const;
  // Points hidden by rewinds, by (step, generation).
  Status ReadSuperseded(const SeriesKey& key, std::vector<SupersededPoint>* out) const;
  // The steps and times the series' visible points span. NotFound if there is no such series, or
  // it has no visible point.
  Status ReadExtent(const SeriesKey& key, SeriesExtent* out) const;
  // Hands every visible point of a series to `scanner` (series_scan.h), chunk by chunk then the
  // head: a fully visible chunk's summary where the scanner takes it, else the chunk's points (with
  // their block summaries, cached, when `block_summaries`). NotFound if there is no such series;
  // an error if a chunk cannot be read.
  Status ScanSeries(const SeriesKey& key, bool block_summaries, SeriesScanner& scanner) const;
  // The histograms named key.metric of a run, by step, within `options`. NotFound if the run or
  // the name is unknown; Corruption if a stored one fails to decode.
  Status ReadHistograms(const SeriesKey& key, const HistogramReadOptions& options,
                        std::vector<Histogram>* out) const;
  // The run's model graph (a JSON object). NotFound if the run is unknown or has none.
  Result<std::string> ReadGraph(const std::string& project, const std::string& run) const;
  // A run's images (texts) within `options`, by (name, step, index). NotFound if the run is
  // unknown (a tag it lacks reads as none); Corruption if a stored entry fails to decode.
  Status ReadImages(const std::string& project, const std::string& run,
                    const MediaReadOptions& options, std::vector<ImageEntry>* out) const;
  Status ReadTexts(const std::string& project, const std::string& run,
                   const MediaReadOptions& options, std::vector<TextEntry>* out) const;
  // The encoded bytes of the stored image whose SHA-256 is `sha256` (32 raw bytes). NotFound if
  // no image has it.
  Result<std::string> ReadBlob(std::string_view sha256) const;
  Result<bool> HasBlob(std::string_view sha256) const;
  // How many distinct image blobs are stored, and their bytes.
  BlobChange BlobTotals() const;

  // --- deletion (retention.cc drives these) ---
  // Deletes a run: its metadata, graph, histograms, images (and the blobs no other image refers
  // to), texts, series and chunks, then checkpoints so that log replay cannot bring it back.
  // NotFound if there is no such run.
  Status DeleteRun(const std::string& project, const std::string& run);
  // Deletes the sealed, persisted chunks of a project's series whose newest point is older than
  // `cutoff` (unix seconds). Returns the number of points deleted.
  Result<uint64_t> DeleteChunksOlderThan(const std::string& project, double cutoff);
  // Deletes a project's histograms whose time is older than `cutoff`. Returns how many.
  Result<uint64_t> DeleteHistogramsOlderThan(const std::string& project, double cutoff);
  // Likewise for images (releasing blobs no other image refers to) and texts.
  Result<uint64_t> DeleteImagesOlderThan(const std::string& project, double cutoff);
  Result<uint64_t> DeleteTextsOlderThan(const std::string& project, double cutoff);

  uint64_t DiskBytes() const;
  uint64_t LogDiskBytes() const { return log_->DiskBytes(); }
  // OK while the write-ahead log accepts appends; else the error that stopped it.
  Status LogHealth() const { return log_->Health(); }
  // OK while the store takes writes; else the error its last write failed with: a seal (the
  // sealer retries it on the clock) or a write of the apply path (written again by the next
  // checkpoint). Checkpoints are refused meanwhile. The store is recovered in the process once the
  // disk takes writes again (ChunkStore::Resume), with no restart.
  Status StoreHealth() const;
  // Waits until every chunk sealed so far is persisted (tests, benchmarks).
  void WaitForSealer();
  // Compacts the store (benchmarks measure the settled size).
  Status CompactStore() { return store_->CompactAll(); }

 private:
  struct Run {
    RunInfo info;  // guarded by runs_mu_
    // The run-level series (rank 0 of a distributed run), by metric name.
    std::unordered_map<std::string, Series*> series;  // guarded by runs_mu_
    // The same series indexed by their project-wide metric id (nullptr where the run lacks one):
    // listing the latest values of many runs resolves each name once, not once per run.
    std::vector<Series*> by_metric_id;  // guarded by runs_mu_
    // A distributed run's ranks 1.. (rank is a dimension of a series): per metric name, held
    // once however many ranks, the series of each rank, indexed by rank (nullptr where that rank
    // has none; entry 0 unused, rank 0 being in `series`). The run clock of each rank is here
    // too, under kClockMetric.
    std::unordered_map<std::string, std::vector<Series*>> rank_series;  // guarded by runs_mu_
    // The ranks table, by rank (docs/distributed.md).
    std::map<uint32_t, RankState> ranks;  // guarded by runs_mu_
  };
  // Interns `metric` in its project and files `series` under the id in `run` (under its rank).
  void IndexSeries(Run& run, const std::string& metric, Series* series) TW_REQUIRES(runs_mu_);
  // Every series of the run, of every rank. Caller holds runs_mu_.
  static void AllSeriesOf(const Run& run, std::vector<Series*>* out);
  // The run's series of `metric` at `rank`, or nullptr. Caller holds runs_mu_.
  static Series* SeriesAt(const Run& run, const std::string& metric, uint32_t rank);
  // Whether the run has `metric` at any rank. Caller holds runs_mu_.
  static bool HasMetric(const Run& run, const std::string& metric);
  // Updates the ranks table for a batch of a distributed run: what the rank says of itself, its
  // newest step, its heartbeat; persists the rank's record when more than its step changed.
  // Returns true when the rank said status=finished and with it every rank the run knows has.
  bool ApplyRank(Run& run, const v1::RunBatch& batch);
  struct SealJob {
    Series* series;
    SeriesRecord record;
    std::vector<ChunkRef> chunks;  // copies holding the in-memory points
    // Filled by the first attempt to persist it, kept for retries.
    std::vector<StoredChunk> stored;
    std::vector<std::string> encoded;
  };

  Engine(const EngineOptions& options, std::unique_ptr<Log> log, std::unique_ptr<ChunkStore> store,
         Clock& clock, Logger& logger, MetricsRegistry& metrics);

  // --- open (engine.cc) ---
  Status LoadStore();
  // Loads every per-step kind's summaries and the blob totals (engine_step_entries.cc).
  Status LoadStepEntries() TW_REQUIRES(runs_mu_);
  // Creates a minimal run for data loaded before its run record.
  void EnsureLoadedRun(const RunKey& key) TW_REQUIRES(runs_mu_);
  Status Replay();
  // Loads the ranks tables (after the series: a rank's newest step comes from its clock).
  Status LoadRanks() TW_REQUIRES(runs_mu_);
  // Sets run.info's rank_count and world_size from the ranks table. Caller holds runs_mu_.
  static void UpdateRankCounts(Run& run);

  // --- refused writes (engine.cc) ---
  // A writer whose batch the log refused (a full or failing disk) may already have sent later
  // ones; the dedup keeps one sequence per writer, so a later batch applied first would make the
  // refused one look like a duplicate when it is resent, and it would be lost. Until the refused
  // batch (or an earlier one) gets in, that writer's later batches are refused (Unavailable).
  Status CheckWriterFence(const v1::WriteRequest& request) const;
  // Fences the writer at the request's sequence and says why the write was refused: a full disk
  // stays ResourceExhausted (HTTP 507), an I/O error becomes Unavailable (503): both retryable.
  Status RefuseWrite(const v1::WriteRequest& request, const Status& log_error);
  // The request got into the log: lifts its writer's fence if it was the refused batch.
  void LiftWriterFence(const v1::WriteRequest& request);

  // --- write path (engine_apply.cc) ---
  WriteOutcome ApplyRecord(uint64_t lsn, const v1::WriteRequest& request) TW_REQUIRES(apply_mu_);
  void ApplyRunBatch(uint64_t lsn, const v1::RunBatch& batch, WriteOutcome* outcome,
                     std::vector<Series*>* touched);
  void ApplyMetadata(Run& run, const v1::RunMetadata& meta);
  // Records a heartbeat: revives a crashed run, leaves a finished one alone.
  void ApplyHeartbeat(Run& run, const v1::Heartbeat& heartbeat);
  // Stores the batch's histograms, replacing any at the same (name, step) (engine_histograms.cc).
  void ApplyHistograms(const v1::RunBatch& batch);
  // Stores the batch's images and texts, replacing any at the same place (engine_media.cc).
  void ApplyImages(const v1::RunBatch& batch);
  void ApplyTexts(const v1::RunBatch& batch);
  ApplyOutcome ApplyPoint(Series& series, const Point& p) TW_REQUIRES(series.mu);
  // Starts a new timeline at meta.rewind_step in every series of `run` (but the clock), or only
  // in those named in meta.rewind_series, that has a visible point there or later
  // (engine_rewind.cc).
  void ApplyRunRewind(uint64_t lsn, Run& run, const v1::RunMetadata& meta, WriteOutcome* outcome,
                      std::vector<Series*>* touched);
  // First write wins: a step the clock already has keeps its time.
  void ApplyClockPoint(Series& clock, const Point& p) TW_REQUIRES(clock.mu);
  // Encodes one chunk of a seal job, without times when the run clock has them. Runs on the sealer.
  Result<std::string> EncodeForSeal(const Series& series, ChunkRef* chunk) const;
  Run& GetOrCreateRun(const std::string& project, const std::string& run, double first_time);
  Series& GetOrCreateSeries(Run& run, const std::string& metric, uint32_t rank = 0);
  void Seal(Series& series, uint64_t lsn) TW_REQUIRES(series.mu);
  void SealerLoop();
  // Checkpoint's store part: waits for the sealer, syncs the store, then persists the writer
  // sequences and the checkpoint LSN (lsn + 1), synced.
  Status PersistCheckpoint(uint64_t lsn,
                           const std::vector<std::pair<std::string, uint64_t>>& writers);
  // WaitForSealer, but returns the store's error instead of waiting while the sealer retries a
  // seal that failed (a checkpoint then fails rather than blocks).
  Status AwaitSealerOrError();
  // A store write of the apply path failed (a full or failing disk): `run`'s record, a rank's
  // record, a graph or a per-step entry. Each is remembered and written again by the next
  // checkpoint (RetryRefusedWrites); StoreHealth reports the error meanwhile.
  void NoteUnpersistedRun(const RunKey& run, const Status& s) TW_EXCLUDES(sealer_mu_);
  void NoteUnpersistedRank(const RunKey& run, uint32_t rank, const Status& s)
      TW_EXCLUDES(sealer_mu_);
  // Whoever calls these holds the mutex that serialises writes of that kind.
  void NoteUnpersistedGraph(const RunKey& run, std::string json, const Status& s)
      TW_REQUIRES(graphs_mu_) TW_EXCLUDES(sealer_mu_);
  void NoteApplyStoreError(const Status& s) TW_REQUIRES(sealer_mu_);
  // Writes again what the apply path failed to write: the run and rank records as they are now,
  // the newest refused graph of each run, each refused per-step entry that no later write
  // replaced. Returns the first error if one fails again (the rest wait for the next call); once
  // nothing waits, StoreHealth no longer reports the apply path's error.
  Status RetryRefusedWrites() TW_EXCLUDES(sealer_mu_, runs_mu_, entries_mu_, graphs_mu_);
  Status RetryRefusedEntries() TW_EXCLUDES(sealer_mu_, entries_mu_);
  // Encodes (once) and writes a seal job, syncing the store first if the series has a seal that
  // is not yet synced (see SealerLoop). Runs on the sealer.
  Status PersistSeal(SealJob& job, std::unordered_set<SeriesId>* sealed_since_sync);
  // Points the series' in-memory chunks of a persisted job at the store and the cache.
  void InstallSeal(const SealJob& job);
  void CheckpointerLoop();

  // --- read path (engine_read.cc) ---
  Series* FindSeries(const SeriesKey& key) const;
  // Decoded points of a chunk; from memory, the cache, or the store. Without `with_times`, a
  // chunk decoded from the store keeps times 0 instead of reading the run clock, and is not cached.
  Result<PointsPtr> ChunkPoints(const Series& series, const ChunkRef& chunk,
                                bool with_times = true) const;
  // Sets each point's time from the run clock (chunks sealed with times_from_clock).
  Status FillTimesFromClock(const Series& series, std::vector<Point>* points) const;
  // Looks up the visible value at `step` in sealed chunks.
  std::optional<Point> FindVisibleInChunks(const Series& series, int64_t step) const
      TW_REQUIRES_SHARED(series.mu);
  // The visible point with the highest step, from the head and the chunks (engine_rewind.cc).
  // A chunk that fails to decode is an error.
  Result<std::optional<Point>> NewestVisible(const Series& series) const
      TW_REQUIRES_SHARED(series.mu);
  // CollectVisible that stops once the first `max_points` points by step are known.
  Status CollectVisiblePage(const Series& series, int64_t from, int64_t to, size_t max_points,
                            std::vector<Point>* out, std::optional<int64_t>* next_step) const
      TW_REQUIRES_SHARED(series.mu);
  Status CollectVisible(const Series& series, int64_t from, int64_t to,
                        std::vector<Point>* out) const TW_REQUIRES_SHARED(series.mu);

  // --- per-step entries: histograms, images, texts (engine_step_entries.cc) ---
  // One kind's index: run -> name -> summary, mirroring the store's "H", "I" or "T" records.
  using EntryIndex = std::map<RunKey, std::map<std::string, StepEntrySummary>>;
  // fn(name, step, index, value); false stops the scan.
  using StepEntryVisitor = std::function<bool(const std::string& name, int64_t step, uint32_t index,
                                              std::string_view value)>;
  // Stores one entry of a kind (replacing the one at its place) and updates the index; `payload`
  // is what the entry refers to (an image's bytes). A failure is logged and the entry skipped.
  void ApplyStepEntry(StepEntryType type, const SeriesKey& name, int64_t step, uint32_t index,
                      double time, std::string_view value, std::string_view payload);
  Status CheckRunExists(const RunKey& run) const;
  bool HasStepEntryName(StepEntryType type, const SeriesKey& name) const;
  // Calls fn for a run's entries of a kind with from <= step <= to, by (name, step, index): of
  // every name, or only of `name` when it is not empty. NotFound if the run is unknown.
  Status ScanStepEntries(StepEntryType type, const RunKey& run, const std::string& name,
                         int64_t from, int64_t to, const StepEntryVisitor& fn) const;
  // Appends the run's names of every kind (kinds "histogram", "image", "text") to a listing.
  void ListStepEntries(const RunKey& run, std::vector<MetricInfo>* out) const;
  // Deletes a run's entries of every kind (releasing their blobs), its metadata and its graph
  // (DeleteRun).
  Status DeleteRunStepEntries(const RunKey& run);
  Result<uint64_t> DeleteStepEntriesOlderThan(StepEntryType type, const std::string& project,
                                              double cutoff);

  const EngineOptions options_;
  std::unique_ptr<Log> log_;
  std::unique_ptr<ChunkStore> store_;
  Clock& clock_;
  Logger& logger_;
  mutable ChunkCache cache_;

  // Serialises applying records with checkpoints.
  Mutex apply_mu_;
  uint64_t last_applied_lsn_ TW_GUARDED_BY(apply_mu_) = 0;
  uint64_t log_bytes_since_checkpoint_ TW_GUARDED_BY(apply_mu_) = 0;
  std::atomic<bool> checkpoint_requested_{false};
  std::atomic<bool> written_since_checkpoint_{false};
  bool opened_ = false;  // Open completed (set once, before the engine is shared)
  std::atomic<bool> closed_{false};

  mutable SharedMutex runs_mu_;
  std::map<RunKey, std::unique_ptr<Run>> runs_ TW_GUARDED_BY(runs_mu_);
  std::unordered_map<SeriesId, std::unique_ptr<Series>> series_ TW_GUARDED_BY(runs_mu_);
  // Deleted series, emptied but kept alive: a reader may still hold a pointer from FindSeries.
  std::vector<std::unique_ptr<Series>> deleted_series_ TW_GUARDED_BY(runs_mu_);
  std::unordered_map<std::string, size_t> series_per_project_ TW_GUARDED_BY(runs_mu_);
  // project -> metric name -> id, for Run::by_metric_id. Ids are never reused.
  std::unordered_map<std::string, std::unordered_map<std::string, uint32_t>> metric_ids_
      TW_GUARDED_BY(runs_mu_);
  SeriesId next_series_id_ TW_GUARDED_BY(runs_mu_) = 1;

  // The per-step entry indexes, one per kind, and the blob totals. The mutex also serialises the
  // store's entry writes, which read what they rewrite (an old entry, its summary, reference
  // counts): applier versus retention and deletion.
  mutable Mutex entries_mu_;
  std::array<EntryIndex, kStepEntryTypes> entries_ TW_GUARDED_BY(entries_mu_);
  BlobChange blob_totals_ TW_GUARDED_BY(entries_mu_);

  mutable Mutex writers_mu_;
  std::unordered_map<std::string, uint64_t> writers_ TW_GUARDED_BY(writers_mu_);
  // Changed since the last checkpoint.
  std::unordered_set<std::string> dirty_writers_ TW_GUARDED_BY(writers_mu_);

  mutable Mutex fences_mu_;
  // Writer -> refused sequence.
  std::unordered_map<std::string, uint64_t> fences_ TW_GUARDED_BY(fences_mu_);

  Mutex listener_mu_;
  CommitListener listener_ TW_GUARDED_BY(listener_mu_);
  std::function<void(const RunKey&)> run_deleted_;  // set before use

  mutable Mutex sealer_mu_;
  std::condition_variable sealer_cv_;
  std::deque<SealJob> seal_queue_ TW_GUARDED_BY(sealer_mu_);
  bool sealer_busy_ TW_GUARDED_BY(sealer_mu_) = false;
  bool sealer_stop_ TW_GUARDED_BY(sealer_mu_) = false;
  Status store_error_ TW_GUARDED_BY(sealer_mu_);  // while the front job is retried
  // Store writes of the apply path that failed (a full or failing disk), written again by the
  // next checkpoint (RetryRefusedWrites), which is refused until they are in: the log keeps what
  // the store lacks. A new series' record is written again by its seal.
  std::set<RunKey> unpersisted_runs_ TW_GUARDED_BY(sealer_mu_);
  std::set<std::pair<RunKey, uint32_t>> unpersisted_ranks_ TW_GUARDED_BY(sealer_mu_);
  // The newest refused graph of each run (graphs are not kept in memory otherwise).
  std::map<RunKey, std::string> unpersisted_graphs_ TW_GUARDED_BY(sealer_mu_);
  // Refused per-step entries, by kind and place (project, run, name, step, index); a later write
  // at the same place that succeeds drops one.
  struct UnpersistedEntry {
    double time = 0;
    std::string value;
    std::string payload;
  };
  using EntryPlace = std::tuple<std::string, std::string, std::string, int64_t, uint32_t>;
  std::array<std::map<EntryPlace, UnpersistedEntry>, kStepEntryTypes> unpersisted_entries_
      TW_GUARDED_BY(sealer_mu_);
  // The first error of the writes above while any waits; StoreHealth reports it.
  Status apply_store_error_ TW_GUARDED_BY(sealer_mu_);
  // Serialises graph writes: the applier's and RetryRefusedWrites' (an older refused graph must
  // not land after a newer one).
  Mutex graphs_mu_;
  std::thread sealer_;

  // Held through a whole Checkpoint(): the checkpointer's, an explicit one and Close's never
  // interleave (two could persist their writer sequences and checkpoint LSNs out of order).
  Mutex checkpoint_run_mu_;
  Mutex checkpoint_mu_;  // guards checkpointer wake-ups
  std::condition_variable checkpoint_cv_;
  bool checkpointer_stop_ TW_GUARDED_BY(checkpoint_mu_) = false;
  std::thread checkpointer_;

  Counter& points_written_;
  Counter& points_unchanged_;
  Counter& rewinds_;
  Counter& chunks_sealed_;
  Counter& seal_errors_;
  Counter& checkpoints_;
};

}  // namespace trainwatch::storage
