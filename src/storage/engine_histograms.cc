// Engine: histograms — stored straight into the store as they are applied (one value per name and
// step), indexed in memory by their "H" summaries, read by step range, deleted by age.
#include <algorithm>

#include "storage/engine.h"

namespace trainwatch::storage {

Status Engine::LoadHistograms() {
  std::lock_guard lock(histograms_mu_);
  return store_->ForEachHistogramSeries([&](SeriesKey key, HistogramSeriesInfo info) {
    EnsureLoadedRun(key.run_key());
    histograms_[key.run_key()][key.metric] = info;
    return Status::Ok();
  });
}

void Engine::ApplyHistograms(const v1::RunBatch& batch) {
  for (const v1::Histogram& h : batch.histograms()) {
    Histogram value;
    value.step = h.step();
    value.time = h.time();
    value.edges.assign(h.edges().begin(), h.edges().end());
    value.counts.assign(h.counts().begin(), h.counts().end());
    const std::string encoded = EncodeHistogram(value);
    const SeriesKey key{batch.project(), batch.run(), h.name()};
    std::lock_guard lock(histograms_mu_);
    auto& names = histograms_[key.run_key()];
    auto it = names.find(h.name());
    HistogramSeriesInfo info = it == names.end() ? HistogramSeriesInfo{} : it->second;
    // A step outside the known range is new; inside it, ask the store (a replaced histogram, or
    // a replayed record, must not be counted twice).
    bool fresh = info.count == 0 || h.step() < info.first_step || h.step() > info.last_step;
    if (!fresh) {
      Result<bool> exists = store_->HasHistogram(key, h.step());
      if (!exists.ok()) {
        logger_.Error("reading histogram", {{"error", exists.status().ToString()}});
        continue;
      }
      fresh = !*exists;
    }
    if (fresh) {
      info.first_step = info.count == 0 ? h.step() : std::min(info.first_step, h.step());
      info.last_step = info.count == 0 ? h.step() : std::max(info.last_step, h.step());
      ++info.count;
    }
    info.min_time = std::min(info.min_time, h.time());
    Status s = store_->PutHistogram(key, h.step(), encoded, info);
    if (!s.ok()) {
      logger_.Error("persisting histogram", {{"error", s.ToString()}});
      continue;
    }
    names[h.name()] = info;
  }
}

Status Engine::ReadHistograms(const SeriesKey& key, const HistogramReadOptions& options,
                              std::vector<Histogram>* out) const {
  {
    std::shared_lock lock(runs_mu_);
    if (runs_.find(key.run_key()) == runs_.end()) {
      return Status::NotFound("no run '" + key.run + "' in project '" + key.project + "'");
    }
  }
  {
    std::lock_guard lock(histograms_mu_);
    auto run = histograms_.find(key.run_key());
    if (run == histograms_.end() || run->second.find(key.metric) == run->second.end()) {
      return Status::NotFound("no histogram '" + key.metric + "' in run '" + key.run + "'");
    }
  }
  Status decoded;
  auto collect = [&](int64_t step, std::string_view encoded) {
    if (out->size() >= options.limit) return false;
    Histogram h;
    decoded = DecodeHistogram(encoded, step, &h);
    if (!decoded.ok()) return false;
    out->push_back(std::move(h));
    return true;
  };
  TW_RETURN_IF_ERROR(store_->ScanHistograms(key, options.from_step, options.to_step, collect));
  return decoded.WithContext("histogram '" + key.metric + "' of run '" + key.run + "'");
}

Result<uint64_t> Engine::DeleteHistogramsOlderThan(const std::string& project, double cutoff) {
  uint64_t deleted = 0;
  // Held throughout: the applier must not change a summary between the scan and the delete.
  std::lock_guard lock(histograms_mu_);
  for (auto run = histograms_.lower_bound(RunKey{project, ""});
       run != histograms_.end() && run->first.project == project;) {
    auto& names = run->second;
    for (auto it = names.begin(); it != names.end();) {
      if (!(it->second.min_time < cutoff)) {
        ++it;
        continue;
      }
      const SeriesKey key{project, run->first.run, it->first};
      std::vector<int64_t> old_steps;
      HistogramSeriesInfo kept;
      Status decoded;
      TW_RETURN_IF_ERROR(store_->ScanHistograms(
          key, 0, std::numeric_limits<int64_t>::max(), [&](int64_t step, std::string_view encoded) {
            Result<double> time = DecodeHistogramTime(encoded);
            if (!time.ok()) {
              decoded = time.status();
              return false;
            }
            if (*time < cutoff) {
              old_steps.push_back(step);
              return true;
            }
            if (kept.count == 0) kept.first_step = step;
            kept.last_step = step;
            ++kept.count;
            kept.min_time = std::min(kept.min_time, *time);
            return true;
          }));
      TW_RETURN_IF_ERROR(
          decoded.WithContext("histogram '" + key.metric + "' of run '" + key.run + "'"));
      TW_RETURN_IF_ERROR(store_->DeleteHistograms(key, old_steps, kept));
      deleted += old_steps.size();
      if (kept.count == 0) {
        it = names.erase(it);
      } else {
        it->second = kept;
        ++it;
      }
    }
    run = names.empty() ? histograms_.erase(run) : std::next(run);
  }
  return deleted;
}

}  // namespace trainwatch::storage
