// Engine: the read path — runs, metric listings, raw reads, and the extent and scan of a series
// that the query layer (src/query/) downsamples.
#include <algorithm>

#include "storage/encoding/chunk_codec.h"
#include "storage/engine.h"

namespace trainwatch::storage {
namespace {

bool StepLess(const Point& a, const Point& b) { return a.step < b.step; }

Status NoSuchSeries(const SeriesKey& key) {
  if (key.rank > 0) {
    return Status::NotFound("no metric '" + key.metric + "' of rank " + std::to_string(key.rank) +
                            " in run '" + key.run + "'");
  }
  return Status::NotFound("no metric '" + key.metric + "' in run '" + key.run + "'");
}

}  // namespace

std::vector<RunInfo> Engine::ListRuns() const {
  ReaderMutexLock lock(runs_mu_);
  std::vector<RunInfo> out;
  out.reserve(runs_.size());
  for (const auto& [key, run] : runs_) out.push_back(run->info);
  return out;
}

std::optional<RunInfo> Engine::GetRun(const std::string& project, const std::string& run) const {
  ReaderMutexLock lock(runs_mu_);
  auto it = runs_.find(RunKey{project, run});
  if (it == runs_.end()) return std::nullopt;
  return it->second->info;
}

size_t Engine::SeriesCount() const {
  ReaderMutexLock lock(runs_mu_);
  size_t n = 0;
  for (const auto& [project, count] : series_per_project_) n += count;  // run clocks not included
  return n;
}

size_t Engine::SeriesCountInProject(const std::string& project) const {
  ReaderMutexLock lock(runs_mu_);
  auto it = series_per_project_.find(project);
  return it == series_per_project_.end() ? 0 : it->second;
}

size_t Engine::MetricCountInRun(const std::string& project, const std::string& run) const {
  ReaderMutexLock lock(runs_mu_);
  auto it = runs_.find(RunKey{project, run});
  if (it == runs_.end()) return 0;
  const Run& r = *it->second;
  size_t n = r.series.size() - r.series.count(kClockMetric);
  // Names only ranks other than 0 have (each once).
  for (const auto& [metric, by_rank] : r.rank_series) {
    if (metric != kClockMetric && r.series.count(metric) == 0) ++n;
  }
  return n;
}

bool Engine::SeriesExists(const SeriesKey& key) const {
  ReaderMutexLock lock(runs_mu_);
  auto it = runs_.find(key.run_key());
  if (it == runs_.end()) return false;
  if (key.rank == 0) return HasMetric(*it->second, key.metric);
  return SeriesAt(*it->second, key.metric, key.rank) != nullptr;
}

Series* Engine::FindSeries(const SeriesKey& key) const {
  ReaderMutexLock lock(runs_mu_);
  auto it = runs_.find(key.run_key());
  if (it == runs_.end()) return nullptr;
  return SeriesAt(*it->second, key.metric, key.rank);
}

std::vector<RankState> Engine::ListRanks(const std::string& project, const std::string& run) const {
  ReaderMutexLock lock(runs_mu_);
  auto it = runs_.find(RunKey{project, run});
  std::vector<RankState> out;
  if (it == runs_.end()) return out;
  out.reserve(it->second->ranks.size());
  for (const auto& [rank, state] : it->second->ranks) out.push_back(state);
  return out;
}

std::vector<uint32_t> Engine::MetricRanks(const SeriesKey& key) const {
  ReaderMutexLock lock(runs_mu_);
  std::vector<uint32_t> out;
  auto it = runs_.find(key.run_key());
  if (it == runs_.end()) return out;
  const Run& r = *it->second;
  if (r.series.count(key.metric) > 0) out.push_back(0);
  if (auto ranked = r.rank_series.find(key.metric); ranked != r.rank_series.end()) {
    for (size_t rank = 1; rank < ranked->second.size(); ++rank) {
      if (ranked->second[rank] != nullptr) out.push_back(static_cast<uint32_t>(rank));
    }
  }
  return out;
}

Result<PointsPtr> Engine::ChunkPoints(const Series& series, const ChunkRef& chunk,
                                      bool with_times) const {
  if (chunk.points) return chunk.points;
  if (PointsPtr cached = cache_.Get(series.id(), chunk.chunk_no)) return cached;
  TW_ASSIGN_OR_RETURN(std::string encoded, store_->GetChunk(series.id(), chunk.chunk_no));
  auto points = std::make_shared<std::vector<Point>>();
  points->reserve(chunk.summary.count);
  TW_RETURN_IF_ERROR(DecodeChunk(encoded, points.get())
                         .WithContext("decoding chunk " + std::to_string(chunk.chunk_no) +
                                      " of series " + std::to_string(series.id())));
  if (chunk.times_from_clock) {
    if (!with_times) return PointsPtr(std::move(points));  // not cached: the times are missing
    TW_RETURN_IF_ERROR(FillTimesFromClock(series, points.get()));
  }
  PointsPtr shared = std::move(points);
  cache_.Put(series.id(), chunk.chunk_no, shared);
  return shared;
}

Status Engine::FillTimesFromClock(const Series& series, std::vector<Point>* points) const {
  if (series.clock == nullptr || points->empty()) {
    return Status::Corruption("chunk of series " + std::to_string(series.id()) +
                              " needs a run clock");
  }
  std::vector<Point> clock;
  {
    ReaderMutexLock lock(series.clock->mu);
    TW_RETURN_IF_ERROR(
        CollectVisible(*series.clock, points->front().step, points->back().step, &clock));
  }
  size_t k = 0;
  for (Point& p : *points) {
    while (k < clock.size() && clock[k].step < p.step) ++k;
    if (k == clock.size() || clock[k].step != p.step) {
      return Status::Corruption("run clock of series " + std::to_string(series.id()) +
                                " has no time for step " + std::to_string(p.step));
    }
    p.time = clock[k].time;
  }
  return Status::Ok();
}

std::optional<Point> Engine::FindVisibleInChunks(const Series& series, int64_t step) const {
  for (auto it = series.chunks.rbegin(); it != series.chunks.rend(); ++it) {
    const ChunkRef& chunk = *it;
    if (chunk.superseded || step >= chunk.hidden_from_step || step < chunk.summary.first_step ||
        step > chunk.summary.last_step) {
      continue;
    }
    Result<PointsPtr> points = ChunkPoints(series, chunk);
    if (!points.ok()) {
      logger_.Error("reading chunk", {{"error", points.status().ToString()}});
      continue;
    }
    auto p = std::lower_bound((*points)->begin(), (*points)->end(), Point{step, 0, 0}, StepLess);
    if (p != (*points)->end() && p->step == step) return *p;
  }
  return std::nullopt;
}

Status Engine::CollectVisible(const Series& series, int64_t from, int64_t to,
                              std::vector<Point>* out) const {
  size_t start = out->size();
  for (const ChunkRef& chunk : series.chunks) {
    if (chunk.FullyHidden() || chunk.summary.last_step < from || chunk.summary.first_step > to) {
      continue;
    }
    TW_ASSIGN_OR_RETURN(PointsPtr points, ChunkPoints(series, chunk));
    auto begin = std::lower_bound(points->begin(), points->end(), Point{from, 0, 0}, StepLess);
    for (auto p = begin; p != points->end() && p->step <= to && p->step < chunk.hidden_from_step;
         ++p) {
      out->push_back(*p);
    }
  }
  auto begin =
      std::lower_bound(series.head.begin(), series.head.end(), Point{from, 0, 0}, StepLess);
  for (auto p = begin; p != series.head.end() && p->step <= to; ++p) out->push_back(*p);
  // Chunks overlap only after out-of-order fill-ins; sort only then.
  if (!std::is_sorted(out->begin() + start, out->end(), StepLess)) {
    std::stable_sort(out->begin() + start, out->end(), StepLess);
  }
  return Status::Ok();
}

Status Engine::CollectVisiblePage(const Series& series, int64_t from, int64_t to, size_t max_points,
                                  std::vector<Point>* out,
                                  std::optional<int64_t>* next_step) const {
  // The sources of visible points in the range, each sorted by step, in the order of their first
  // step: the chunks, then the head (which out-of-order fill-ins may place before them).
  struct Source {
    int64_t first;
    const ChunkRef* chunk;  // null: the head
  };
  std::vector<Source> sources;
  for (const ChunkRef& chunk : series.chunks) {
    if (chunk.FullyHidden() || chunk.summary.last_step < from || chunk.summary.first_step > to)
      continue;
    sources.push_back({std::max(from, chunk.summary.first_step), &chunk});
  }
  auto head = std::lower_bound(series.head.begin(), series.head.end(), Point{from, 0, 0}, StepLess);
  if (head != series.head.end() && head->step <= to) sources.push_back({head->step, nullptr});
  std::stable_sort(sources.begin(), sources.end(),
                   [](const Source& a, const Source& b) { return a.first < b.first; });

  const size_t start = out->size();
  auto page = [&] { return out->size() - start; };
  auto sort = [&] {
    if (!std::is_sorted(out->begin() + start, out->end(), StepLess)) {
      std::stable_sort(out->begin() + start, out->end(), StepLess);
    }
  };
  for (size_t i = 0; i < sources.size(); ++i) {
    if (const ChunkRef* chunk = sources[i].chunk) {
      TW_ASSIGN_OR_RETURN(PointsPtr points, ChunkPoints(series, *chunk));
      auto begin = std::lower_bound(points->begin(), points->end(), Point{from, 0, 0}, StepLess);
      for (auto p = begin; p != points->end() && p->step <= to && p->step < chunk->hidden_from_step;
           ++p) {
        out->push_back(*p);
      }
    } else {
      for (auto p = head; p != series.head.end() && p->step <= to; ++p) out->push_back(*p);
    }
    if (page() < max_points) continue;
    // Every point below the next source's first step is in: no later source holds one.
    const bool last = i + 1 == sources.size();
    const int64_t boundary = last ? std::numeric_limits<int64_t>::max() : sources[i + 1].first;
    sort();
    size_t final_points =
        std::lower_bound(out->begin() + start, out->end(), Point{boundary, 0, 0}, StepLess) -
        (out->begin() + start);
    if (last) final_points = page();
    if (final_points < max_points || (final_points == max_points && page() == max_points && last))
      continue;
    *next_step = final_points > max_points ? (*out)[start + max_points].step : boundary;
    out->resize(start + max_points);
    return Status::Ok();
  }
  sort();
  next_step->reset();
  return Status::Ok();
}

Status Engine::ReadSeries(const SeriesKey& key, const SeriesReadOptions& options,
                          std::vector<Point>* out, std::optional<int64_t>* next_step) const {
  Series* series = FindSeries(key);
  if (series == nullptr) return NoSuchSeries(key);
  ReaderMutexLock lock(series->mu);
  if (options.max_points == 0) {
    if (next_step) next_step->reset();
    return CollectVisible(*series, options.from_step, options.to_step, out);
  }
  std::optional<int64_t> ignored;
  return CollectVisiblePage(*series, options.from_step, options.to_step, options.max_points, out,
                            next_step ? next_step : &ignored);
}

Status Engine::ReadSuperseded(const SeriesKey& key, std::vector<SupersededPoint>* out) const {
  Series* series = FindSeries(key);
  if (series == nullptr) return NoSuchSeries(key);
  ReaderMutexLock lock(series->mu);
  // A hidden point's generation: for a chunk a rewind cut, the generation it was sealed in; for a
  // superseded chunk, the generation its points belonged to.
  for (const ChunkRef& chunk : series->chunks) {
    if (chunk.FullyVisible()) continue;
    TW_ASSIGN_OR_RETURN(PointsPtr points, ChunkPoints(*series, chunk));
    for (const Point& p : *points) {
      if (chunk.superseded || p.step >= chunk.hidden_from_step) out->push_back({p, chunk.gen});
    }
  }
  for (const SupersededRun& run : series->superseded) {
    for (const Point& p : run.points) out->push_back({p, run.gen});
  }
  std::stable_sort(
      out->begin(), out->end(), [](const SupersededPoint& a, const SupersededPoint& b) {
        return a.point.step != b.point.step ? a.point.step < b.point.step : a.gen < b.gen;
      });
  return Status::Ok();
}

std::vector<MetricInfo> Engine::ListMetrics(const std::string& project,
                                            const std::string& run) const {
  std::vector<std::pair<std::string, Series*>> list;
  {
    ReaderMutexLock lock(runs_mu_);
    auto it = runs_.find(RunKey{project, run});
    if (it == runs_.end()) return {};
    for (const auto& [name, series] : it->second->series) {
      if (!series->is_clock()) list.emplace_back(name, series);
    }
    // A distributed run's metric is listed once, as its run-level view (rank 0), or as its lowest
    // rank's series where rank 0 has none.
    for (const auto& [name, by_rank] : it->second->rank_series) {
      if (name == kClockMetric || it->second->series.count(name) > 0) continue;
      auto lowest = std::find_if(by_rank.begin(), by_rank.end(),
                                 [](const Series* s) { return s != nullptr; });
      if (lowest != by_rank.end()) list.emplace_back(name, *lowest);
    }
  }
  std::sort(list.begin(), list.end());
  std::vector<MetricInfo> out;
  for (const auto& [name, series] : list) {
    MetricInfo info;
    info.name = name;
    ReaderMutexLock lock(series->mu);
    info.timelines = series->gen + 1;
    info.has_latest = series->has_latest;
    info.latest = series->latest;
    bool first = true;
    auto see = [&](int64_t lo, int64_t hi, uint64_t n) {
      info.count += n;
      if (n == 0) return;
      info.first_step = first ? lo : std::min(info.first_step, lo);
      info.last_step = first ? hi : std::max(info.last_step, hi);
      first = false;
    };
    for (const ChunkRef& chunk : series->chunks) {
      if (chunk.FullyHidden()) continue;
      if (chunk.FullyVisible()) {
        see(chunk.summary.first_step, chunk.summary.last_step, chunk.summary.count);
        continue;
      }
      Result<PointsPtr> points = ChunkPoints(*series, chunk);
      if (!points.ok()) continue;
      uint64_t n = 0;
      int64_t hi = chunk.summary.first_step;
      for (const Point& p : **points) {
        if (p.step >= chunk.hidden_from_step) break;
        ++n;
        hi = p.step;
      }
      see(chunk.summary.first_step, hi, n);
    }
    if (!series->head.empty())
      see(series->head.front().step, series->head.back().step, series->head.size());
    out.push_back(std::move(info));
  }
  ListStepEntries(RunKey{project, run}, &out);
  // By name; a scalar before a histogram, an image and a text of the same name.
  std::stable_sort(out.begin(), out.end(),
                   [](const MetricInfo& a, const MetricInfo& b) { return a.name < b.name; });
  return out;
}

std::vector<RunLiveness> Engine::ListHeartbeatRuns() const {
  ReaderMutexLock lock(runs_mu_);
  std::vector<RunLiveness> out;
  for (const auto& [key, run] : runs_) {
    const RunInfo& info = run->info;
    if (info.heartbeat_interval > 0) {
      out.push_back({key, info.status, info.last_heartbeat, info.heartbeat_interval});
    }
  }
  return out;
}

Result<std::string> Engine::ReadGraph(const std::string& project, const std::string& run) const {
  {
    ReaderMutexLock lock(runs_mu_);
    auto it = runs_.find(RunKey{project, run});
    if (it == runs_.end())
      return Status::NotFound("no run '" + run + "' in project '" + project + "'");
    if (!it->second->info.has_graph) return Status::NotFound("run '" + run + "' has no graph");
  }
  return store_->runs().GetGraph(project, run);
}

std::vector<std::vector<std::pair<std::string, Point>>> Engine::LatestValues(
    const std::vector<RunKey>& runs, const std::vector<std::string>& metrics) const {
  // Resolve names to series under the index lock, then read each series under its own.
  std::vector<std::vector<std::pair<const std::string*, Series*>>> found(runs.size());
  {
    ReaderMutexLock lock(runs_mu_);
    std::unordered_map<std::string, std::vector<int64_t>> ids_by_project;  // -1: unknown name
    for (size_t r = 0; r < runs.size(); ++r) {
      auto run = runs_.find(runs[r]);
      if (run == runs_.end()) continue;
      auto [ids, fresh] = ids_by_project.try_emplace(runs[r].project);
      if (fresh) {
        auto project = metric_ids_.find(runs[r].project);
        for (const std::string& metric : metrics) {
          int64_t id = -1;
          if (project != metric_ids_.end() && metric != kClockMetric) {
            auto it = project->second.find(metric);
            if (it != project->second.end()) id = it->second;
          }
          ids->second.push_back(id);
        }
      }
      const std::vector<Series*>& by_id = run->second->by_metric_id;
      for (size_t m = 0; m < metrics.size(); ++m) {
        int64_t id = ids->second[m];
        if (id >= 0 && static_cast<size_t>(id) < by_id.size() && by_id[id] != nullptr) {
          found[r].emplace_back(&metrics[m], by_id[id]);
        }
      }
    }
  }
  std::vector<std::vector<std::pair<std::string, Point>>> out(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    out[r].reserve(found[r].size());
    for (const auto& [metric, series] : found[r]) {
      Point p;
      if (series->ReadLatest(&p)) out[r].emplace_back(*metric, p);
    }
  }
  return out;
}

Status Engine::ReadExtent(const SeriesKey& key, SeriesExtent* out) const {
  Series* series = FindSeries(key);
  if (series == nullptr) return NoSuchSeries(key);
  ReaderMutexLock lock(series->mu);
  bool any = false;
  auto see = [&](int64_t first_step, int64_t last_step, double min_time, double max_time) {
    out->first_step = any ? std::min(out->first_step, first_step) : first_step;
    out->last_step = any ? std::max(out->last_step, last_step) : last_step;
    out->min_time = any ? std::min(out->min_time, min_time) : min_time;
    out->max_time = any ? std::max(out->max_time, max_time) : max_time;
    any = true;
  };
  for (const ChunkRef& chunk : series->chunks) {
    if (chunk.FullyHidden()) continue;
    // A partly hidden chunk widens the extent a little; a bucket grid only needs to cover the
    // points.
    see(chunk.summary.first_step, chunk.summary.last_step, chunk.summary.min_time,
        chunk.summary.max_time);
  }
  for (const Point& p : series->head) see(p.step, p.step, p.time, p.time);
  if (!any) return Status::NotFound("metric '" + key.metric + "' has no points");
  return Status::Ok();
}

Status Engine::ScanSeries(const SeriesKey& key, bool block_summaries,
                          SeriesScanner& scanner) const {
  Series* series = FindSeries(key);
  if (series == nullptr) return NoSuchSeries(key);
  ReaderMutexLock lock(series->mu);
  for (const ChunkRef& chunk : series->chunks) {
    if (chunk.FullyHidden()) continue;
    if (chunk.FullyVisible() && scanner.TakeSummary(chunk.summary)) continue;
    if (!scanner.WantsChunk(chunk.summary)) continue;
    TW_ASSIGN_OR_RETURN(PointsPtr points, ChunkPoints(*series, chunk, scanner.NeedsTimes()));
    const Point* base = points->data();
    const Point* visible_end =
        base + (std::lower_bound(points->begin(), points->end(),
                                 Point{chunk.hidden_from_step, 0, 0}, StepLess) -
                points->begin());
    BlocksPtr blocks;
    if (block_summaries) {
      blocks = cache_.GetBlocks(series->id(), chunk.chunk_no);
      if (!blocks) {
        blocks = std::make_shared<const std::vector<BlockSummary>>(SummarizeBlocks(*points));
        cache_.PutBlocks(series->id(), chunk.chunk_no, blocks);
      }
    }
    scanner.TakePoints(base, visible_end, blocks ? base : nullptr,
                       blocks ? blocks->data() : nullptr);
  }
  scanner.TakePoints(series->head.data(), series->head.data() + series->head.size(), nullptr,
                     nullptr);
  return Status::Ok();
}

}  // namespace trainwatch::storage
