// Engine: run-level rewinds (RunMetadata.rewind_step). A training run restarted from a checkpoint
// at step S makes every series of the run start a new timeline at S, as TensorBoard discards a
// run's events at and after a SessionLog START — including the series the restarted run never
// writes again, which the per-point resume rule (ApplyPoint) cannot reach. With
// RunMetadata.rewind_series only the named series are rewound: TensorBoard's per-tag purge when a
// tag's step goes backwards, which must start a new timeline even where the rewritten value is
// identical (the resume rule takes an identical point as a retry).
#include <algorithm>
#include <iterator>

#include "storage/engine.h"

namespace trainwatch::storage {

void Engine::ApplyRunRewind(uint64_t lsn, Run& run, const v1::RunMetadata& meta,
                            WriteOutcome* outcome, std::vector<Series*>* touched) {
  const int64_t step = meta.rewind_step();
  std::vector<Series*> series;
  {
    ReaderMutexLock lock(runs_mu_);
    // The clock keeps the first time of every step for good: a rewound step keeps its time.
    // A distributed run restarts as a whole: every rank's series are rewound.
    if (meta.rewind_series().empty()) {
      std::vector<Series*> all;
      AllSeriesOf(run, &all);
      for (Series* s : all) {
        if (!s->is_clock()) series.push_back(s);
      }
    } else {
      // Only the named series (a tag whose step went backwards); each once, unknown ones ignored.
      for (const std::string& name : meta.rewind_series()) {
        if (name == kClockMetric) continue;
        auto add = [&series](Series* s) {
          if (s != nullptr && std::find(series.begin(), series.end(), s) == series.end())
            series.push_back(s);
        };
        if (auto it = run.series.find(name); it != run.series.end()) add(it->second);
        if (auto it = run.rank_series.find(name); it != run.rank_series.end()) {
          for (Series* s : it->second) add(s);
        }
      }
    }
  }
  for (Series* s : series) {
    WriterMutexLock lock(s->mu);
    if (lsn <= s->flushed_lsn) continue;  // replay: the rewind is in the persisted series record
    // `latest` is the visible point with the highest step. Nothing visible at or after `step`:
    // nothing to hide, no new generation. This also makes a repeated rewind (a replayed record, a
    // retried request) a no-op.
    if (!s->has_latest || s->latest.step < step) continue;
    s->RewindAt(step);
    Result<std::optional<Point>> newest = NewestVisible(*s);
    if (!newest.ok()) {
      // Only the latest value is affected (lists, alert context); reads decode the chunk again.
      logger_.Error("finding the latest point after a rewind",
                    {{"series", s->id()}, {"error", newest.status().ToString()}});
    }
    s->has_latest = newest.ok() && newest->has_value();
    if (s->has_latest) s->latest = **newest;
    s->PublishLatest();
    ++outcome->series_rewound;
    if (s->head.empty() && s->superseded.empty()) {
      // Everything the rewind hid is in sealed chunks: only the series record changed, and a
      // checkpoint seals only series holding points in memory. Written now (a seal of nothing),
      // or the rewind would be lost once the checkpoint dropped this record from the log.
      Seal(*s, lsn);
    } else if (std::find(touched->begin(), touched->end(), s) == touched->end()) {
      touched->push_back(s);
    }
  }
}

Result<std::optional<Point>> Engine::NewestVisible(const Series& series) const {
  std::optional<Point> best;
  auto consider = [&best](const Point& p) {
    if (!best || p.step > best->step) best = p;
  };
  if (!series.head.empty()) consider(series.head.back());  // the head is sorted by step
  for (const ChunkRef& chunk : series.chunks) {
    if (chunk.FullyHidden() || (best && chunk.summary.last_step <= best->step)) continue;
    if (chunk.FullyVisible()) {
      consider(Point{chunk.summary.last_step, chunk.summary.max_time, chunk.summary.last});
      continue;
    }
    TW_ASSIGN_OR_RETURN(PointsPtr points, ChunkPoints(series, chunk));
    auto end = std::lower_bound(points->begin(), points->end(), chunk.hidden_from_step,
                                [](const Point& p, int64_t s) { return p.step < s; });
    if (end != points->begin()) consider(*std::prev(end));
  }
  return best;
}

}  // namespace trainwatch::storage
