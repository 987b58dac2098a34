// Engine: deleting runs and old chunks (retention and the disk guard).
#include "storage/engine.h"

namespace trainwatch::storage {
namespace {

SeriesRecord RecordOf(const Series& series) TW_REQUIRES_SHARED(series.mu) {
  SeriesRecord record;
  record.id = series.id();
  record.key = series.key();
  record.gen = series.gen;
  record.next_chunk_no = series.next_chunk_no;
  record.flushed_lsn = series.flushed_lsn;
  record.rewinds = series.rewinds;
  return record;
}

}  // namespace

Status Engine::DeleteRun(const std::string& project, const std::string& run) {
  {
    MutexLock apply_lock(apply_mu_);  // no record may touch the run meanwhile
    std::unique_ptr<Run> removed;
    std::vector<std::unique_ptr<Series>> series;
    {
      WriterMutexLock lock(runs_mu_);
      auto it = runs_.find(RunKey{project, run});
      if (it == runs_.end())
        return Status::NotFound("no run '" + run + "' in project '" + project + "'");
      removed = std::move(it->second);
      runs_.erase(it);
      // A metric counts once however many ranks have it.
      for (const auto& [metric, s] : removed->series) {
        if (metric != kClockMetric) --series_per_project_[project];
      }
      for (const auto& [metric, by_rank] : removed->rank_series) {
        if (metric != kClockMetric && removed->series.count(metric) == 0)
          --series_per_project_[project];
      }
      std::vector<Series*> all;
      AllSeriesOf(*removed, &all);
      for (Series* s : all) {
        auto owned = series_.find(s->id());
        series.push_back(std::move(owned->second));
        series_.erase(owned);
      }
    }
    WaitForSealer();  // a pending seal of these series must not land after the delete
    for (auto& s : series) {
      TW_RETURN_IF_ERROR(store_->DeleteSeries(s->id()));
      WriterMutexLock series_lock(s->mu);
      for (const ChunkRef& chunk : s->chunks) cache_.Erase(s->id(), chunk.chunk_no);
      s->chunks.clear();
      s->head.clear();
      s->superseded.clear();
      s->has_latest = false;
      s->PublishLatest();
    }
    {
      MutexLock graphs_lock(graphs_mu_);  // a refused graph of the run is not written again
      MutexLock lock(sealer_mu_);
      unpersisted_graphs_.erase(RunKey{project, run});
    }
    // Histograms, images, texts, then the run's metadata and graph.
    TW_RETURN_IF_ERROR(DeleteRunStepEntries(RunKey{project, run}));
    WriterMutexLock lock(runs_mu_);
    for (auto& s : series) deleted_series_.push_back(std::move(s));
  }
  logger_.Info("run deleted", {{"project", project}, {"run", run}});
  if (run_deleted_) run_deleted_(RunKey{project, run});
  return Checkpoint();
}

Result<uint64_t> Engine::DeleteChunksOlderThan(const std::string& project, double cutoff) {
  std::vector<Series*> candidates;
  {
    ReaderMutexLock lock(runs_mu_);
    for (const auto& [id, series] : series_) {
      // The clock stays: chunks that keep their times there may outlive any one clock chunk.
      if (series->key().project == project && !series->is_clock())
        candidates.push_back(series.get());
    }
  }
  uint64_t deleted = 0;
  for (Series* series : candidates) {
    std::vector<uint32_t> nos;
    SeriesRecord record;
    {
      WriterMutexLock lock(series->mu);
      auto& chunks = series->chunks;
      for (auto it = chunks.begin(); it != chunks.end();) {
        bool persisted = !it->points && it->encoded_bytes > 0;
        if (persisted && it->summary.max_time < cutoff) {
          nos.push_back(it->chunk_no);
          deleted += it->summary.count;
          cache_.Erase(series->id(), it->chunk_no);
          it = chunks.erase(it);
        } else {
          ++it;
        }
      }
      if (nos.empty()) continue;
      record = RecordOf(*series);
    }
    TW_RETURN_IF_ERROR(store_->DeleteChunks(record, nos));
  }
  return deleted;
}

}  // namespace trainwatch::storage
