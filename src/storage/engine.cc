#include "storage/engine.h"

#include <algorithm>
#include <cstring>

#include "common/json.h"
#include "storage/encoding/chunk_codec.h"

namespace trainwatch::storage {

Engine::Engine(const EngineOptions& options, std::unique_ptr<Log> log,
               std::unique_ptr<ChunkStore> store, Clock& clock, Logger& logger,
               MetricsRegistry& metrics)
    : options_(options),
      log_(std::move(log)),
      store_(std::move(store)),
      clock_(clock),
      logger_(logger),
      cache_(options.chunk_cache_bytes),
      points_written_(metrics.AddCounter("trainwatch_points_written_total",
                                         "Points stored (appended, filled in or rewound).")),
      points_unchanged_(metrics.AddCounter("trainwatch_points_unchanged_total",
                                           "Points identical to the stored value (retries).")),
      rewinds_(metrics.AddCounter("trainwatch_rewinds_total",
                                  "New timelines started by a changed value at a written step.")),
      chunks_sealed_(metrics.AddCounter("trainwatch_chunks_sealed_total", "Chunks persisted.")),
      seal_errors_(
          metrics.AddCounter("trainwatch_seal_errors_total", "Chunks that failed to persist.")),
      checkpoints_(metrics.AddCounter("trainwatch_checkpoints_total", "Checkpoints completed.")) {
  metrics.AddGauge("trainwatch_series", "Series in the store.",
                   [this] { return static_cast<double>(SeriesCount()); });
  metrics.AddGauge("trainwatch_disk_bytes", "Bytes on disk: store and write-ahead log.",
                   [this] { return static_cast<double>(DiskBytes()); });
  metrics.AddGauge("trainwatch_chunk_cache_bytes", "Decoded chunks held in memory.",
                   [this] { return static_cast<double>(cache_.bytes()); });
  metrics.AddGauge("trainwatch_image_blobs",
                   "Distinct image contents stored (each once, by SHA-256).",
                   [this] { return static_cast<double>(BlobTotals().blobs); });
  metrics.AddGauge("trainwatch_image_blob_bytes", "Bytes of the stored image contents.",
                   [this] { return static_cast<double>(BlobTotals().bytes); });
}

Result<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options, std::unique_ptr<Log> log,
                                             std::unique_ptr<ChunkStore> store, Clock& clock,
                                             Logger& logger, MetricsRegistry& metrics) {
  std::unique_ptr<Engine> engine(
      new Engine(options, std::move(log), std::move(store), clock, logger, metrics));
  engine->sealer_ = std::thread([e = engine.get()] { e->SealerLoop(); });
  engine->checkpointer_ = std::thread([e = engine.get()] { e->CheckpointerLoop(); });
  TW_RETURN_IF_ERROR(engine->LoadStore().WithContext("loading store"));
  TW_RETURN_IF_ERROR(engine->Replay().WithContext("replaying write-ahead log"));
  engine->opened_ = true;
  return engine;
}

Engine::~Engine() {
  Status s = Close();
  if (!s.ok()) logger_.Error("closing engine", {{"error", s.ToString()}});
}

Status Engine::LoadStore() {
  WriterMutexLock runs_lock(runs_mu_);  // nothing else runs yet: for the analysis
  TW_RETURN_IF_ERROR(store_->runs().ForEachRun(
      [&](std::string project, std::string id, std::string json) TW_REQUIRES(runs_mu_) {
        Result<nlohmann::json> j = ParseJson(json);
        if (!j.ok())
          return Status::Corruption("run record of " + project + "/" + id + ": " +
                                    j.status().message());
        TW_ASSIGN_OR_RETURN(RunInfo info, RunInfo::FromJson(*j));
        auto run = std::make_unique<Run>();
        run->info = std::move(info);
        runs_[RunKey{project, id}] = std::move(run);
        return Status::Ok();
      }));
  TW_RETURN_IF_ERROR(LoadStepEntries());
  TW_RETURN_IF_ERROR(store_->ForEachSeries([&](SeriesRecord record) TW_REQUIRES(runs_mu_) {
    auto series = std::make_unique<Series>(record.id, record.key);
    {
      WriterMutexLock series_lock(series->mu);
      series->gen = record.gen;
      series->rewinds = std::move(record.rewinds);
      series->flushed_lsn = record.flushed_lsn;
      series->next_chunk_no = record.next_chunk_no;
    }
    RunKey rk = record.key.run_key();
    auto& run = runs_[rk];
    if (!run) {  // series written before its run record: rebuild a minimal one
      run = std::make_unique<Run>();
      run->info.project = rk.project;
      run->info.id = rk.run;
      run->info.name = rk.run;
    }
    // A metric counts once however many ranks have it.
    if (record.key.metric != kClockMetric && !HasMetric(*run, record.key.metric))
      ++series_per_project_[rk.project];
    IndexSeries(*run, record.key.metric, series.get());
    next_series_id_ = std::max(next_series_id_, record.id + 1);
    series_[record.id] = std::move(series);
    return Status::Ok();
  }));
  TW_RETURN_IF_ERROR(store_->ForEachChunk([&](StoredChunk chunk) TW_REQUIRES(runs_mu_) {
    auto it = series_.find(chunk.series_id);
    if (it == series_.end()) return Status::Ok();  // orphan of a deleted series
    WriterMutexLock series_lock(it->second->mu);
    it->second->chunks.push_back(std::move(chunk.ref));
    return Status::Ok();
  }));
  for (auto& [key, run] : runs_) {
    auto clock = run->series.find(kClockMetric);
    if (clock != run->series.end()) {
      for (auto& [metric, series] : run->series) {
        if (series != clock->second) series->clock = clock->second;
      }
    }
    // Each rank's series keep time by that rank's clock.
    auto rank_clocks = run->rank_series.find(kClockMetric);
    if (rank_clocks == run->rank_series.end()) continue;
    for (auto& [metric, by_rank] : run->rank_series) {
      if (metric == kClockMetric) continue;
      for (size_t r = 1; r < by_rank.size(); ++r) {
        if (by_rank[r] != nullptr && r < rank_clocks->second.size())
          by_rank[r]->clock = rank_clocks->second[r];
      }
    }
  }
  for (auto& [id, series] : series_) {
    WriterMutexLock series_lock(series->mu);
    for (ChunkRef& chunk : series->chunks) {
      for (const Rewind& r : series->rewinds) {
        if (r.gen > chunk.gen && !chunk.superseded && chunk.summary.last_step >= r.step) {
          chunk.hidden_from_step = std::min(chunk.hidden_from_step, r.step);
        }
      }
    }
    TW_ASSIGN_OR_RETURN(std::optional<Point> newest, NewestVisible(*series));
    series->has_latest = newest.has_value();
    if (newest) series->latest = *newest;
  }
  for (auto& [id, series] : series_) {
    WriterMutexLock series_lock(series->mu);
    series->PublishLatest();
  }
  // The time of a run's newest point is not persisted with every write: it is derived from the
  // chunks here, and replay brings it up to date.
  std::vector<Series*> all;
  for (auto& [key, run] : runs_) {
    all.clear();
    AllSeriesOf(*run, &all);
    for (const Series* series : all) {
      ReaderMutexLock series_lock(series->mu);
      for (const ChunkRef& chunk : series->chunks) {
        run->info.last_write_time = std::max(run->info.last_write_time, chunk.summary.max_time);
      }
    }
  }
  TW_RETURN_IF_ERROR(LoadRanks().WithContext("loading the ranks tables"));
  MutexLock writers_lock(writers_mu_);  // nothing else runs yet: for the analysis
  TW_RETURN_IF_ERROR(store_->writers().ForEach([&](std::string writer, uint64_t seq) {
    writers_mu_.AssertHeld();  // called synchronously, under writers_lock
    writers_[writer] = seq;
    return Status::Ok();
  }));
  logger_.Info("store loaded", {{"runs", runs_.size()}, {"series", series_.size()}});
  return Status::Ok();
}

Status Engine::Replay() {
  TW_ASSIGN_OR_RETURN(uint64_t checkpoint, store_->checkpoint().Get());
  {
    // Everything below the checkpoint is in the store: a checkpoint taken before any new record is
    // applied (a run deleted right after a restart) must not move it back, or the next start
    // would replay records the log still holds below it and bring deleted data back.
    MutexLock lock(apply_mu_);
    if (checkpoint > 0) last_applied_lsn_ = std::max(last_applied_lsn_, checkpoint - 1);
  }
  uint64_t applied = 0;
  TW_ASSIGN_OR_RETURN(
      ReplayStats stats,
      log_->Replay(checkpoint, [&](uint64_t lsn, std::string_view record) -> Status {
        v1::WriteRequest request;
        if (record.empty() || record[0] != kWriteRecordType ||
            !request.ParseFromArray(record.data() + 1, static_cast<int>(record.size() - 1))) {
          logger_.Error("skipping unreadable log record", {{"lsn", lsn}});
          return Status::Ok();
        }
        MutexLock lock(apply_mu_);
        ApplyRecord(lsn, request);
        ++applied;
        return Status::Ok();
      }));
  if (stats.torn_tail_bytes > 0 || stats.corrupt_records > 0) {
    logger_.Warn("write-ahead log damage repaired", {{"torn_tail_bytes", stats.torn_tail_bytes},
                                                     {"corrupt_records", stats.corrupt_records},
                                                     {"report", stats.report}});
  }
  logger_.Info("write-ahead log replayed", {{"from_lsn", checkpoint},
                                            {"records", stats.records},
                                            {"applied", applied},
                                            {"bytes", stats.bytes}});
  return Status::Ok();
}

Status Engine::LoadRanks() {
  TW_RETURN_IF_ERROR(store_->runs().ForEachRank(
      [&](std::string project, std::string id, uint32_t rank, std::string json) {
        runs_mu_.AssertHeld();  // called synchronously, under LoadStore's runs_lock
        Result<nlohmann::json> j = ParseJson(json);
        if (!j.ok()) {
          return Status::Corruption("rank record " + std::to_string(rank) + " of " + project + "/" +
                                    id + ": " + j.status().message());
        }
        TW_ASSIGN_OR_RETURN(RankState state, RankState::FromJson(*j));
        state.rank = rank;
        EnsureLoadedRun(RunKey{project, id});
        runs_[RunKey{project, id}]->ranks[rank] = std::move(state);
        return Status::Ok();
      }));
  // A rank's newest step is persisted only now and then: its clock (replay brings both further).
  for (auto& [key, run] : runs_) {
    for (auto& [rank, state] : run->ranks) {
      Series* clock = SeriesAt(*run, kClockMetric, rank);
      if (clock == nullptr) continue;
      ReaderMutexLock clock_lock(clock->mu);
      if (clock->has_latest && clock->latest.step >= state.last_step) {
        state.last_step = clock->latest.step;
        state.last_write_time = std::max(state.last_write_time, clock->latest.time);
      }
    }
    UpdateRankCounts(*run);
  }
  return Status::Ok();
}

void Engine::UpdateRankCounts(Run& run) {
  run.info.rank_count = static_cast<uint32_t>(run.ranks.size());
  uint32_t world = 0;
  for (const auto& [rank, state] : run.ranks) {
    world = std::max({world, state.world_size, rank + 1});
  }
  run.info.world_size = world;
}

void Engine::AllSeriesOf(const Run& run, std::vector<Series*>* out) {
  for (const auto& [metric, series] : run.series) out->push_back(series);
  for (const auto& [metric, by_rank] : run.rank_series) {
    for (Series* series : by_rank) {
      if (series != nullptr) out->push_back(series);
    }
  }
}

Series* Engine::SeriesAt(const Run& run, const std::string& metric, uint32_t rank) {
  if (rank == 0) {
    auto it = run.series.find(metric);
    return it == run.series.end() ? nullptr : it->second;
  }
  auto it = run.rank_series.find(metric);
  if (it == run.rank_series.end() || rank >= it->second.size()) return nullptr;
  return it->second[rank];
}

bool Engine::HasMetric(const Run& run, const std::string& metric) {
  return run.series.count(metric) > 0 || run.rank_series.count(metric) > 0;
}

void Engine::IndexSeries(Run& run, const std::string& metric, Series* series) {
  if (const uint32_t rank = series->key().rank; rank > 0) {
    std::vector<Series*>& by_rank = run.rank_series[metric];
    if (by_rank.size() <= rank) by_rank.resize(rank + 1, nullptr);
    by_rank[rank] = series;
    return;  // the project's metric ids index run-level series
  }
  run.series[metric] = series;
  auto& ids = metric_ids_[run.info.project];
  uint32_t id = ids.try_emplace(metric, static_cast<uint32_t>(ids.size())).first->second;
  if (run.by_metric_id.size() <= id) run.by_metric_id.resize(id + 1, nullptr);
  run.by_metric_id[id] = series;
}

void Engine::SetCommitListener(CommitListener listener) {
  MutexLock lock(listener_mu_);
  listener_ = std::move(listener);
}

void Engine::SealerLoop() {
  // Series with a seal written since the sealer last synced the store. Unsynced writes reach the
  // disk in no particular order (RocksDB spreads them over several log files), so a series' next
  // seal, whose record claims everything up to a newer LSN, is written only once the previous one
  // is durable: otherwise a crash could keep the newer record, lose the older chunk, and replay
  // would skip the records that chunk held (the crash test lost acknowledged points so).
  std::unordered_set<SeriesId> sealed_since_sync;
  for (;;) {
    SealJob* job;
    {
      MutexLock lock(sealer_mu_);
      sealer_cv_.wait(lock.native(), [&]() TW_REQUIRES(sealer_mu_) {
        return sealer_stop_ || !seal_queue_.empty();
      });
      if (seal_queue_.empty()) return;
      job = &seal_queue_.front();  // stays queued until persisted: later seals wait behind it
      sealer_busy_ = true;
    }
    Status status = PersistSeal(*job, &sealed_since_sync);
    while (!status.ok()) {
      // A full or failing disk: the points stay in memory and in the log (checkpoints are refused
      // meanwhile), and the seal is retried on the clock until the store takes it.
      seal_errors_.Add();
      logger_.Error("persisting sealed chunks; retrying",
                    {{"series", job->record.id}, {"error", status.ToString()}});
      MutexLock lock(sealer_mu_);
      store_error_ = status;
      sealer_cv_.notify_all();  // WaitForSealer returns: a checkpoint fails instead of waiting
      clock_.WaitFor(lock.native(), sealer_cv_, options_.store_retry_seconds,
                     [&]() TW_REQUIRES(sealer_mu_) { return sealer_stop_; });
      if (sealer_stop_) return;  // shutting down: the log still holds the points
      lock.Unlock();
      status = store_->Resume();
      if (status.ok()) status = PersistSeal(*job, &sealed_since_sync);
      // The store is back: what the apply path failed to write meanwhile goes in now, not at the
      // next checkpoint (which writes it again if this fails).
      if (status.ok()) (void)RetryRefusedWrites();
    }
    InstallSeal(*job);
    {
      MutexLock lock(sealer_mu_);
      seal_queue_.pop_front();
      store_error_ = Status::Ok();
      sealer_busy_ = false;
    }
    sealer_cv_.notify_all();
  }
}

Status Engine::PersistSeal(SealJob& job, std::unordered_set<SeriesId>* sealed_since_sync) {
  if (job.encoded.empty()) {
    std::vector<StoredChunk> stored;
    std::vector<std::string> encoded;
    for (ChunkRef& chunk : job.chunks) {
      TW_ASSIGN_OR_RETURN(std::string bytes, EncodeForSeal(*job.series, &chunk));
      chunk.encoded_bytes = bytes.size();
      encoded.push_back(std::move(bytes));
      StoredChunk sc;
      sc.series_id = job.series->id();
      sc.ref = chunk;
      sc.ref.points.reset();
      stored.push_back(std::move(sc));
    }
    job.stored = std::move(stored);
    job.encoded = std::move(encoded);
  }
  const SeriesId id = job.series->id();
  if (sealed_since_sync->count(id) > 0) {
    TW_RETURN_IF_ERROR(store_->Sync().WithContext("syncing the series' previous seal"));
    sealed_since_sync->clear();
  }
  TW_RETURN_IF_ERROR(store_->PutSeal(job.record, job.stored, job.encoded));
  sealed_since_sync->insert(id);
  return Status::Ok();
}

void Engine::InstallSeal(const SealJob& job) {
  WriterMutexLock lock(job.series->mu);
  // Chunks stay in chunk_no order (appended as sealed, loaded in key order, only ever erased).
  auto& chunks = job.series->chunks;
  for (const ChunkRef& sealed : job.chunks) {
    auto chunk = std::lower_bound(chunks.begin(), chunks.end(), sealed.chunk_no,
                                  [](const ChunkRef& c, uint32_t no) { return c.chunk_no < no; });
    if (chunk == chunks.end() || chunk->chunk_no != sealed.chunk_no) continue;  // deleted meanwhile
    cache_.Put(job.series->id(), chunk->chunk_no, chunk->points);
    chunk->points.reset();
    chunk->encoded_bytes = sealed.encoded_bytes;
    chunk->times_from_clock = sealed.times_from_clock;
  }
  chunks_sealed_.Add(job.chunks.size());
}

Result<std::string> Engine::EncodeForSeal(const Series& series, ChunkRef* chunk) const {
  const std::vector<Point>& points = *chunk->points;
  EncodeOptions options;
  if (series.clock != nullptr) {
    // The clock only ever gains steps, and a step's time never changes: what matches now matches
    // for good.
    std::vector<Point> clock;
    {
      ReaderMutexLock lock(series.clock->mu);
      Status s = CollectVisible(*series.clock, points.front().step, points.back().step, &clock);
      if (!s.ok()) clock.clear();
    }
    size_t k = 0;
    bool all = !clock.empty();
    for (const Point& p : points) {
      while (k < clock.size() && clock[k].step < p.step) ++k;
      if (k == clock.size() || clock[k].step != p.step ||
          std::memcmp(&clock[k].time, &p.time, sizeof p.time) != 0) {
        all = false;
        break;
      }
    }
    options.times_absent = all;
  }
  chunk->times_from_clock = options.times_absent;
  return EncodeChunk(points, options);
}

void Engine::WaitForSealer() {
  MutexLock lock(sealer_mu_);
  sealer_cv_.wait(lock.native(),
                  [&]() TW_REQUIRES(sealer_mu_) { return seal_queue_.empty() && !sealer_busy_; });
}

Status Engine::AwaitSealerOrError() {
  MutexLock lock(sealer_mu_);
  sealer_cv_.wait(lock.native(), [&]() TW_REQUIRES(sealer_mu_) {
    return (seal_queue_.empty() && !sealer_busy_) || !store_error_.ok();
  });
  return store_error_;
}

Status Engine::StoreHealth() const {
  MutexLock lock(sealer_mu_);
  return store_error_.ok() ? apply_store_error_ : store_error_;
}

void Engine::NoteUnpersistedRun(const RunKey& run, const Status& s) {
  logger_.Error("persisting run record; written again at the next checkpoint",
                {{"run", run.run}, {"error", s.ToString()}});
  MutexLock lock(sealer_mu_);
  unpersisted_runs_.insert(run);
  NoteApplyStoreError(s.WithContext("persisting the record of run " + run.run));
}

void Engine::NoteUnpersistedRank(const RunKey& run, uint32_t rank, const Status& s) {
  logger_.Error("persisting rank; written again at the next checkpoint",
                {{"run", run.run}, {"rank", rank}, {"error", s.ToString()}});
  MutexLock lock(sealer_mu_);
  unpersisted_ranks_.emplace(run, rank);
  NoteApplyStoreError(s.WithContext("persisting a rank of run " + run.run));
}

void Engine::NoteUnpersistedGraph(const RunKey& run, std::string json, const Status& s) {
  logger_.Error("persisting graph; written again at the next checkpoint",
                {{"run", run.run}, {"error", s.ToString()}});
  MutexLock lock(sealer_mu_);
  unpersisted_graphs_[run] = std::move(json);
  NoteApplyStoreError(s.WithContext("persisting the graph of run " + run.run));
}

void Engine::NoteApplyStoreError(const Status& s) {
  if (apply_store_error_.ok()) {
    apply_store_error_ = s.WithContext(
        "a store write failed while applying the log; written again at the next "
        "checkpoint, which waits for it");
  }
}

Status Engine::RetryRefusedWrites() {
  std::set<RunKey> runs;
  std::set<std::pair<RunKey, uint32_t>> ranks;
  {
    MutexLock lock(sealer_mu_);
    runs = unpersisted_runs_;
    ranks = unpersisted_ranks_;
  }
  // Run and rank records as they are now, under runs_mu_: the applier changes them, and writes
  // them, only under it exclusively, so a newer record never lands before this older one.
  for (const RunKey& key : runs) {
    {
      ReaderMutexLock lock(runs_mu_);
      auto it = runs_.find(key);
      if (it != runs_.end()) {  // else deleted meanwhile
        TW_RETURN_IF_ERROR(store_->runs()
                               .PutRun(key.project, key.run, it->second->info.ToJson().dump())
                               .WithContext("persisting the record of run " + key.run));
      }
    }
    MutexLock lock(sealer_mu_);
    unpersisted_runs_.erase(key);
  }
  for (const auto& [key, rank] : ranks) {
    {
      ReaderMutexLock lock(runs_mu_);
      auto it = runs_.find(key);
      auto state = it != runs_.end() ? it->second->ranks.find(rank)
                                     : std::map<uint32_t, RankState>::iterator();
      if (it != runs_.end() && state != it->second->ranks.end()) {
        TW_RETURN_IF_ERROR(store_->runs()
                               .PutRank(key.project, key.run, rank, state->second.ToJson().dump())
                               .WithContext("persisting a rank of run " + key.run));
      }
    }
    MutexLock lock(sealer_mu_);
    unpersisted_ranks_.erase({key, rank});
  }
  {
    MutexLock graphs_lock(graphs_mu_);
    std::map<RunKey, std::string> graphs;
    {
      MutexLock lock(sealer_mu_);
      graphs = unpersisted_graphs_;
    }
    for (const auto& [key, json] : graphs) {
      TW_RETURN_IF_ERROR(store_->runs()
                             .PutGraph(key.project, key.run, json)
                             .WithContext("persisting the graph of run " + key.run));
      MutexLock lock(sealer_mu_);
      unpersisted_graphs_.erase(key);
    }
  }
  TW_RETURN_IF_ERROR(RetryRefusedEntries());
  MutexLock lock(sealer_mu_);
  bool waiting =
      !unpersisted_runs_.empty() || !unpersisted_ranks_.empty() || !unpersisted_graphs_.empty();
  for (const auto& entries : unpersisted_entries_) waiting = waiting || !entries.empty();
  if (!waiting) apply_store_error_ = Status::Ok();
  return apply_store_error_;
}

void Engine::CheckpointerLoop() {
  MutexLock lock(checkpoint_mu_);
  for (;;) {
    bool woken = clock_.WaitFor(lock.native(), checkpoint_cv_, options_.checkpoint_interval_seconds,
                                [&]() TW_REQUIRES(checkpoint_mu_) {
                                  return checkpointer_stop_ || checkpoint_requested_.load();
                                });
    if (checkpointer_stop_) return;
    // On a timer, only if something was written since the last checkpoint, or while the store
    // is degraded: the checkpoint recovers it and writes what it refused.
    if (!woken && !written_since_checkpoint_.load() && StoreHealth().ok()) continue;
    lock.Unlock();
    Status s = Checkpoint();
    if (!s.ok()) logger_.Error("checkpoint failed", {{"error", s.ToString()}});
    lock.Lock();
  }
}

Status Engine::Checkpoint() {
  MutexLock run_lock(checkpoint_run_mu_);
  checkpoint_requested_ = false;
  written_since_checkpoint_ = false;
  uint64_t lsn;
  std::vector<std::pair<std::string, uint64_t>> writers;  // the writer sequences as of `lsn`
  {
    MutexLock lock(apply_mu_);
    lsn = last_applied_lsn_;
    ReaderMutexLock runs_lock(runs_mu_);
    for (auto& [id, series] : series_) {
      WriterMutexLock series_lock(series->mu);
      if (!series->head.empty() || !series->superseded.empty()) {
        Seal(*series, lsn);
      }
    }
    log_bytes_since_checkpoint_ = 0;
    MutexLock writers_lock(writers_mu_);
    for (const std::string& writer : dirty_writers_) writers.emplace_back(writer, writers_[writer]);
    dirty_writers_.clear();
  }
  Status s = PersistCheckpoint(lsn, writers);
  if (!s.ok()) {
    MutexLock writers_lock(writers_mu_);
    for (const auto& [writer, seq] : writers) dirty_writers_.insert(writer);
    return s;
  }
  TW_RETURN_IF_ERROR(log_->TruncateBefore(lsn + 1));
  checkpoints_.Add();
  logger_.Debug("checkpoint", {{"lsn", lsn}});
  return Status::Ok();
}

Status Engine::PersistCheckpoint(uint64_t lsn,
                                 const std::vector<std::pair<std::string, uint64_t>>& writers) {
  // A store write that failed since (here, or in the apply path with no seal behind it) is
  // recovered first, once the disk takes writes again; the sealer recovers it on its own clock too.
  TW_RETURN_IF_ERROR(store_->Resume().WithContext("keeping the log"));
  TW_RETURN_IF_ERROR(
      AwaitSealerOrError().WithContext("sealed chunks failed to persist; keeping the log"));
  TW_RETURN_IF_ERROR(RetryRefusedWrites().WithContext("keeping the log"));
  // Unsynced writes reach the disk in no particular order, so what claims coverage goes in only
  // once what it covers is durable: a writer sequence durable before the chunks holding its batch
  // would make replay skip that batch as a duplicate (the crash test lost acknowledged points so).
  TW_RETURN_IF_ERROR(store_->Sync());
  for (const auto& [writer, seq] : writers) {
    TW_RETURN_IF_ERROR(
        store_->writers().Put(writer, seq).WithContext("persisting writer sequences"));
  }
  return store_->checkpoint().Put(lsn + 1);  // synced: the writer sequences with it
}

Status Engine::CheckWriterFence(const v1::WriteRequest& request) const {
  if (request.writer_id().empty()) return Status::Ok();
  MutexLock lock(fences_mu_);
  auto it = fences_.find(request.writer_id());
  if (it == fences_.end() || request.sequence() <= it->second) return Status::Ok();
  return Status::Unavailable("batch " + std::to_string(it->second) + " of writer " +
                             request.writer_id() +
                             " was refused (disk full or failing); resend it before later ones");
}

Status Engine::RefuseWrite(const v1::WriteRequest& request, const Status& log_error) {
  const bool disk = log_error.code() == StatusCode::kResourceExhausted ||
                    log_error.code() == StatusCode::kIoError;
  if (disk && !request.writer_id().empty()) {
    MutexLock lock(fences_mu_);
    auto [it, inserted] = fences_.try_emplace(request.writer_id(), request.sequence());
    if (!inserted) it->second = std::min(it->second, request.sequence());
  }
  if (log_error.code() == StatusCode::kResourceExhausted) {
    return log_error.WithContext("disk full; the write was not stored, resend it");
  }
  if (log_error.code() == StatusCode::kIoError) {
    return Status::Unavailable("storage I/O error; the write was not stored, resend it: " +
                               log_error.message());
  }
  return log_error;
}

void Engine::LiftWriterFence(const v1::WriteRequest& request) {
  if (request.writer_id().empty()) return;
  MutexLock lock(fences_mu_);
  auto it = fences_.find(request.writer_id());
  if (it != fences_.end() && request.sequence() <= it->second) fences_.erase(it);
}

Status Engine::Close() {
  if (closed_.exchange(true)) return Status::Ok();
  log_->Close();
  {
    MutexLock lock(checkpoint_mu_);
    checkpointer_stop_ = true;
  }
  checkpoint_cv_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
  // An engine whose recovery failed records no checkpoint: what it holds may be incomplete.
  Status status = opened_ ? Checkpoint() : Status::Ok();
  {
    MutexLock lock(sealer_mu_);
    sealer_stop_ = true;
  }
  sealer_cv_.notify_all();
  if (sealer_.joinable()) sealer_.join();
  return status;
}

Status Engine::SnapshotStore(const std::string& dir) {
  TW_RETURN_IF_ERROR(Checkpoint().WithContext("checkpoint before a store snapshot"));
  return store_->CreateCheckpoint(dir);
}

uint64_t Engine::DiskBytes() const { return store_->DiskBytes() + log_->DiskBytes(); }

}  // namespace trainwatch::storage
