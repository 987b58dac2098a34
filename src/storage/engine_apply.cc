// Engine: the write path — log, apply, seal.
#include <algorithm>
#include <cstring>

#include "common/json.h"
#include "storage/engine.h"

namespace trainwatch::storage {
namespace {

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

bool Engine::IsDuplicate(const std::string& writer_id, uint64_t sequence) const {
  if (writer_id.empty()) return false;
  MutexLock lock(writers_mu_);
  auto it = writers_.find(writer_id);
  return it != writers_.end() && sequence <= it->second;
}

void Engine::Write(v1::WriteRequest request, WriteCallback done) {
  if (closed_) {
    done(Status::Unavailable("server is shutting down"), WriteOutcome{});
    return;
  }
  if (IsDuplicate(request.writer_id(), request.sequence())) {
    WriteOutcome outcome;
    outcome.duplicate_batch = true;
    done(Status::Ok(), outcome);
    return;
  }
  if (Status fenced = CheckWriterFence(request); !fenced.ok()) {
    done(fenced, WriteOutcome{});
    return;
  }
  std::string record(1, kWriteRecordType);
  request.AppendToString(&record);
  auto shared = std::make_shared<v1::WriteRequest>(std::move(request));
  size_t bytes = record.size();
  log_->Append(std::move(record), [this, shared, bytes, done = std::move(done)](
                                      const Status& status, uint64_t lsn) {
    if (!status.ok()) {
      done(RefuseWrite(*shared, status.WithContext("appending to the write-ahead log")),
           WriteOutcome{});
      return;
    }
    LiftWriterFence(*shared);
    WriteOutcome outcome;
    {
      MutexLock lock(apply_mu_);
      outcome = ApplyRecord(lsn, *shared);
      log_bytes_since_checkpoint_ += bytes;
      written_since_checkpoint_ = true;
      if (log_bytes_since_checkpoint_ >= options_.checkpoint_log_bytes &&
          !checkpoint_requested_.exchange(true)) {
        checkpoint_cv_.notify_all();
      }
    }
    {
      MutexLock lock(listener_mu_);
      if (listener_) listener_(*shared, outcome);
    }
    done(Status::Ok(), outcome);
  });
}

WriteOutcome Engine::ApplyRecord(uint64_t lsn, const v1::WriteRequest& request) {
  WriteOutcome outcome;
  outcome.lsn = lsn;
  last_applied_lsn_ = std::max(last_applied_lsn_, lsn);
  const std::string& writer = request.writer_id();
  if (!writer.empty()) {
    MutexLock lock(writers_mu_);
    uint64_t& last = writers_[writer];
    if (request.sequence() <= last) {
      outcome.duplicate_batch = true;
      return outcome;
    }
    last = request.sequence();
    // Persisted by the next checkpoint, not now: the store must hold the sequences as of its
    // checkpoint LSN, or replaying the log after a crash would take the records after that LSN for
    // duplicates and drop the points they hold that were not yet sealed.
    dirty_writers_.insert(writer);
  }
  std::vector<Series*> touched;
  for (const v1::RunBatch& batch : request.runs()) ApplyRunBatch(lsn, batch, &outcome, &touched);
  for (Series* series : touched) {
    WriterMutexLock lock(series->mu);
    if (series->head.size() >= options_.chunk_points || series->superseded.size() > 1 ||
        (series->superseded.size() == 1 &&
         series->superseded[0].points.size() >= options_.chunk_points)) {
      Seal(*series, lsn);
    }
  }
  points_written_.Add(outcome.points_written);
  points_unchanged_.Add(outcome.points_unchanged);
  rewinds_.Add(outcome.rewinds);
  return outcome;
}

void Engine::ApplyRunBatch(uint64_t lsn, const v1::RunBatch& batch, WriteOutcome* outcome,
                           std::vector<Series*>* touched) {
  // A new run starts at the batch's first time; the server's clock only when the batch has none.
  double first_time;
  if (batch.times_size() > 0)
    first_time = batch.times(0);
  else if (batch.has_heartbeat())
    first_time = batch.heartbeat().received_time();
  else if (batch.histograms_size() > 0)
    first_time = batch.histograms(0).time();
  else if (batch.images_size() > 0)
    first_time = batch.images(0).time();
  else if (batch.texts_size() > 0)
    first_time = batch.texts(0).time();
  else
    first_time = clock_.NowUnixSeconds();
  Run& run = GetOrCreateRun(batch.project(), batch.run(), first_time);
  // A distributed run's rank: its rows go to that rank's series (rank 0's are the run-level ones).
  const uint32_t rank = batch.has_rank() ? batch.rank().rank() : 0;
  const bool run_finished_by_ranks = batch.has_rank() && ApplyRank(run, batch);
  if (batch.has_metadata()) {
    const v1::RunMetadata& meta = batch.metadata();
    if (batch.has_rank() && meta.has_status() && meta.status() == "finished" &&
        !run_finished_by_ranks) {
      // One rank finished while others go on: the rank is finished (ApplyRank), not the run.
      v1::RunMetadata rest = meta;
      rest.clear_status();
      rest.clear_end_time();
      ApplyMetadata(run, rest);
    } else {
      ApplyMetadata(run, meta);
    }
    // Before the batch's rows: a restarted run's first rows begin the new timeline.
    if (meta.has_rewind_step()) ApplyRunRewind(lsn, run, meta, outcome, touched);
  }
  if (batch.has_heartbeat()) ApplyHeartbeat(run, batch.heartbeat());
  // Histograms, images and texts are kept per run, not per rank: only the run-level ones (rank 0's
  // and those of batches without a rank) are stored; other ranks' would overwrite them.
  if (rank == 0) {
    if (batch.histograms_size() > 0) ApplyHistograms(batch);
    if (batch.images_size() > 0) ApplyImages(batch);
    if (batch.texts_size() > 0) ApplyTexts(batch);
  }
  const int rows = batch.steps_size();
  const bool has_times = batch.times_size() == rows;
  // Sampled rows (machine samples, numbered by sample) stay out of the step clock. Their series
  // still point at the run's clock, but a chunk is sealed without times only when every time
  // matches the clock bit for bit (EncodeForSeal), so their own times are kept otherwise.
  Series* clock = nullptr;
  if (rows > 0 && !batch.sampled()) {
    clock = &GetOrCreateSeries(run, kClockMetric, rank);
    WriterMutexLock lock(clock->mu);
    if (lsn > clock->flushed_lsn) {
      if (rows > 1) clock->ReserveHead(static_cast<size_t>(rows));
      for (int row = 0; row < rows; ++row) {
        double t = has_times ? batch.times(row) : first_time;
        ApplyClockPoint(*clock, Point{batch.steps(row), t, t});
      }
      if (std::find(touched->begin(), touched->end(), clock) == touched->end())
        touched->push_back(clock);
    }
  }
  for (const v1::MetricColumn& column : batch.metrics()) {
    Series& series = GetOrCreateSeries(run, column.name(), rank);
    WriterMutexLock lock(series.mu);
    if (series.clock == nullptr) series.clock = clock;  // a series created before its run had rows
    if (lsn <= series.flushed_lsn) continue;            // replay: already in persisted chunks
    const bool dense = column.rows_size() == 0;
    const int n = column.values_size();
    if (n > 1) series.ReserveHead(static_cast<size_t>(n));
    bool any = false;
    for (int i = 0; i < n; ++i) {
      int row = dense ? i : static_cast<int>(column.rows(i));
      if (row < 0 || row >= rows) continue;  // validated before logging; never trust blindly
      Point p{batch.steps(row), has_times ? batch.times(row) : first_time, column.values(i)};
      switch (ApplyPoint(series, p)) {
        case ApplyOutcome::kDuplicate:
          ++outcome->points_unchanged;
          break;
        case ApplyOutcome::kRewound:
          ++outcome->rewinds;
          [[fallthrough]];
        default:
          ++outcome->points_written;
          any = true;
      }
    }
    if (any) series.PublishLatest();
    if (any && std::find(touched->begin(), touched->end(), &series) == touched->end()) {
      touched->push_back(&series);
    }
  }
  if (rows > 0 && has_times) {
    double last_time = *std::max_element(batch.times().begin(), batch.times().end());
    WriterMutexLock lock(runs_mu_);
    run.info.last_write_time = std::max(run.info.last_write_time, last_time);
  }
}

ApplyOutcome Engine::ApplyPoint(Series& series, const Point& p) {
  if (!series.has_latest || p.step > series.latest.step) {
    series.AppendToHead(p);
    series.latest = p;
    series.has_latest = true;
    return ApplyOutcome::kAppended;
  }
  // At or before the newest step: an identical retry, a rewind, or a fill-in.
  auto in_head = std::lower_bound(series.head.begin(), series.head.end(), p.step,
                                  [](const Point& q, int64_t s) { return q.step < s; });
  std::optional<Point> existing;
  if (in_head != series.head.end() && in_head->step == p.step) {
    existing = *in_head;
  } else {
    existing = FindVisibleInChunks(series, p.step);
  }
  if (existing) {
    if (SameBits(existing->value, p.value)) return ApplyOutcome::kDuplicate;
    series.RewindAt(p.step);
    series.AppendToHead(p);
    series.latest = p;
    series.has_latest = true;
    return ApplyOutcome::kRewound;
  }
  series.InsertIntoHead(in_head, p);
  return ApplyOutcome::kFilledIn;
}

void Engine::ApplyClockPoint(Series& clock, const Point& p) {
  if (!clock.has_latest || p.step > clock.latest.step) {
    clock.AppendToHead(p);
    clock.latest = p;
    clock.has_latest = true;
    return;
  }
  auto in_head = std::lower_bound(clock.head.begin(), clock.head.end(), p.step,
                                  [](const Point& q, int64_t s) { return q.step < s; });
  if (in_head != clock.head.end() && in_head->step == p.step) return;
  if (FindVisibleInChunks(clock, p.step)) return;
  clock.InsertIntoHead(in_head, p);
}

void Engine::ApplyMetadata(Run& run, const v1::RunMetadata& meta) {
  if (meta.has_graph_json()) {
    // Stored before the run record that says it is there; outside runs_mu_ (it may be megabytes).
    MutexLock graphs_lock(graphs_mu_);
    const RunKey key{run.info.project, run.info.id};
    Status s = store_->runs().PutGraph(key.project, key.run, meta.graph_json());
    if (!s.ok()) {
      NoteUnpersistedGraph(key, meta.graph_json(), s);
    } else {
      MutexLock lock(sealer_mu_);
      unpersisted_graphs_.erase(key);  // a newer graph is in: the refused one must not follow
    }
  }
  WriterMutexLock lock(runs_mu_);
  RunInfo& info = run.info;
  if (meta.has_graph_json()) info.has_graph = true;
  if (meta.has_name()) info.name = meta.name();
  if (meta.has_group()) info.group = meta.group();
  if (meta.replace_tags()) info.tags.clear();
  for (const std::string& tag : meta.tags()) info.tags.insert(tag);
  if (meta.has_config_json()) {
    Result<nlohmann::json> patch = ParseJson(meta.config_json());
    if (patch.ok()) MergeConfig(&info.config, *patch);  // validated before logging
  }
  if (meta.has_status()) {
    RunStatus status;
    if (ParseRunStatus(meta.status(), &status)) info.status = status;
  }
  if (meta.has_start_time()) info.start_time = meta.start_time();
  if (meta.has_end_time()) info.end_time = meta.end_time();
  if (meta.has_host()) info.host = meta.host();
  Status s = store_->runs().PutRun(info.project, info.id, info.ToJson().dump());
  if (!s.ok()) NoteUnpersistedRun(RunKey{info.project, info.id}, s);
}

bool Engine::ApplyRank(Run& run, const v1::RunBatch& batch) {
  const v1::RankInfo& info = batch.rank();
  const uint32_t r = info.rank();
  // The rank's newest training step in this batch (machine samples are not steps).
  int64_t last_step = -1;
  double last_time = 0;
  if (!batch.sampled()) {
    for (int row = 0; row < batch.steps_size(); ++row) {
      if (batch.steps(row) > last_step) {
        last_step = batch.steps(row);
        last_time = row < batch.times_size() ? batch.times(row) : 0;
      }
    }
  }
  const bool finishing = batch.has_metadata() && batch.metadata().has_status() &&
                         batch.metadata().status() == "finished";
  std::optional<RankState> changed;
  bool run_finished = false;
  {
    WriterMutexLock lock(runs_mu_);
    auto [it, added] = run.ranks.try_emplace(r);
    RankState& state = it->second;
    bool persist = added;
    state.rank = r;
    if (info.world_size() != 0 && info.world_size() != state.world_size) {
      state.world_size = info.world_size();
      persist = true;
    }
    // Protobuf cannot tell local rank 0 from none: a later batch without it keeps what was said.
    if ((info.local_rank() != 0 || !info.host().empty()) && info.local_rank() != state.local_rank) {
      state.local_rank = info.local_rank();
      persist = true;
    }
    if (!info.host().empty() && info.host() != state.host) {
      state.host = info.host();
      persist = true;
    }
    if (last_step > state.last_step) {
      state.last_step = last_step;
      state.last_write_time = last_time;
    }
    if (batch.has_heartbeat() && !state.finished) {
      state.last_heartbeat = std::max(state.last_heartbeat, batch.heartbeat().received_time());
      state.heartbeat_interval = batch.heartbeat().interval_seconds();
      persist = true;
    }
    if (finishing && !state.finished) {
      state.finished = true;
      persist = true;
    }
    if (finishing) {
      run_finished = std::all_of(run.ranks.begin(), run.ranks.end(),
                                 [](const auto& entry) { return entry.second.finished; });
    }
    if (persist) {
      UpdateRankCounts(run);
      changed = state;
    }
  }
  if (changed) {
    Status s = store_->runs().PutRank(run.info.project, run.info.id, r, changed->ToJson().dump());
    if (!s.ok()) NoteUnpersistedRank(RunKey{run.info.project, run.info.id}, r, s);
  }
  return run_finished;
}

void Engine::ApplyHeartbeat(Run& run, const v1::Heartbeat& heartbeat) {
  WriterMutexLock lock(runs_mu_);
  RunInfo& info = run.info;
  if (info.status == RunStatus::kFinished) return;
  info.last_heartbeat = std::max(info.last_heartbeat, heartbeat.received_time());
  info.heartbeat_interval = heartbeat.interval_seconds();
  if (info.status == RunStatus::kCrashed) {
    // Declared crashed, yet alive after all (a long partition): running again.
    info.status = RunStatus::kRunning;
    info.end_time = 0;
  }
  Status s = store_->runs().PutRun(info.project, info.id, info.ToJson().dump());
  if (!s.ok()) NoteUnpersistedRun(RunKey{info.project, info.id}, s);
}

Engine::Run& Engine::GetOrCreateRun(const std::string& project, const std::string& id,
                                    double first_time) {
  RunKey key{project, id};
  {
    ReaderMutexLock lock(runs_mu_);
    auto it = runs_.find(key);
    if (it != runs_.end()) return *it->second;
  }
  auto run = std::make_unique<Run>();
  run->info.project = project;
  run->info.id = id;
  run->info.name = id;
  run->info.start_time = first_time;
  Status s = store_->runs().PutRun(project, id, run->info.ToJson().dump());
  if (!s.ok()) NoteUnpersistedRun(key, s);
  WriterMutexLock lock(runs_mu_);
  auto& slot = runs_[key];
  slot = std::move(run);
  return *slot;
}

Series& Engine::GetOrCreateSeries(Run& run, const std::string& metric, uint32_t rank) {
  {
    ReaderMutexLock lock(runs_mu_);
    if (Series* existing = SeriesAt(run, metric, rank)) return *existing;
  }
  WriterMutexLock lock(runs_mu_);
  SeriesId id = next_series_id_++;
  auto series =
      std::make_unique<Series>(id, SeriesKey{run.info.project, run.info.id, metric, rank});
  SeriesRecord record;
  record.id = id;
  record.key = series->key();
  Status s = store_->PutSeries(record);
  if (!s.ok()) logger_.Error("persisting new series", {{"error", s.ToString()}});
  Series* raw = series.get();
  if (metric != kClockMetric) {
    // The clock (of the rank) is created first (by the first row), so it exists whenever a metric
    // of that rank does.
    raw->clock = SeriesAt(run, kClockMetric, rank);
    // A metric counts once in its project however many ranks have it.
    if (!HasMetric(run, metric)) ++series_per_project_[run.info.project];
  }
  IndexSeries(run, metric, raw);
  series_[id] = std::move(series);
  return *raw;
}

void Engine::Seal(Series& series, uint64_t lsn) {
  SealJob job;
  job.series = &series;
  // A superseded chunk is labelled with the generation its points belonged to.
  auto make_chunk = [&](std::vector<Point> points, bool superseded,
                        uint32_t gen) TW_REQUIRES(series.mu) {
    ChunkRef chunk;
    chunk.chunk_no = series.next_chunk_no++;
    chunk.gen = gen;
    chunk.superseded = superseded;
    for (const Point& p : points) chunk.summary.Add(p);
    chunk.points = std::make_shared<const std::vector<Point>>(std::move(points));
    series.chunks.push_back(chunk);
    job.chunks.push_back(chunk);
  };
  // A big batch can leave a head longer than one chunk should be: cut it into equal pieces of at
  // least chunk_points (no short leftover, which would compress worse and cost a record of its
  // own).
  auto make_chunks = [&](std::vector<Point>& points, bool superseded,
                         uint32_t gen) TW_REQUIRES(series.mu) {
    if (points.empty()) return;
    const size_t target = std::max<size_t>(1, options_.chunk_points);
    const size_t pieces = std::max<size_t>(1, points.size() / target);
    for (size_t i = 0; i < pieces; ++i) {
      size_t start = points.size() * i / pieces, end = points.size() * (i + 1) / pieces;
      make_chunk(std::vector<Point>(points.begin() + start, points.begin() + end), superseded, gen);
    }
  };
  make_chunks(series.head, false, series.gen);
  for (SupersededRun& run : series.superseded) make_chunks(run.points, true, run.gen);
  // The head's memory goes too, not only its points: a run of 1,024 ranks has 1,024 heads per
  // metric, and a head grown to a chunk's worth would otherwise stay that large while idle.
  std::vector<Point>().swap(series.head);
  series.superseded.clear();
  series.flushed_lsn = lsn;
  job.record.id = series.id();
  job.record.key = series.key();
  job.record.gen = series.gen;
  job.record.next_chunk_no = series.next_chunk_no;
  job.record.flushed_lsn = lsn;
  job.record.rewinds = series.rewinds;
  {
    MutexLock lock(sealer_mu_);
    seal_queue_.push_back(std::move(job));
  }
  sealer_cv_.notify_one();
}

}  // namespace trainwatch::storage
