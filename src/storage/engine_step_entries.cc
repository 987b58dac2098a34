// Engine: per-step entries (histograms, images, texts; step_entry.h) — one path for every kind.
// Entries are stored straight into the store as they are applied (StepEntryStore), indexed in
// memory by their summaries, read by step range, deleted with their run or by age. The kinds'
// own files (engine_histograms.cc, engine_media.cc) only encode and decode their values.
#include <algorithm>
#include <limits>

#include "storage/engine.h"

namespace trainwatch::storage {
namespace {

void Add(BlobChange* total, const BlobChange& change) {
  total->blobs += change.blobs;
  total->bytes += change.bytes;
}

}  // namespace

void Engine::EnsureLoadedRun(const RunKey& key) {
  auto& run = runs_[key];
  if (run) return;
  // Entries persisted before their run record: rebuild a minimal one.
  run = std::make_unique<Run>();
  run->info.project = key.project;
  run->info.id = key.run;
  run->info.name = key.run;
}

Status Engine::LoadStepEntries() {
  MutexLock lock(entries_mu_);
  for (StepEntryType type : kAllStepEntryTypes) {
    EntryIndex& index = entries_[static_cast<size_t>(type)];
    TW_RETURN_IF_ERROR(store_->entries(type).ForEachSummary(
        [&](SeriesKey name, StepEntrySummary summary) TW_REQUIRES(runs_mu_) {
          EnsureLoadedRun(name.run_key());
          index[name.run_key()][name.metric] = summary;
          return Status::Ok();
        }));
  }
  TW_ASSIGN_OR_RETURN(blob_totals_, store_->blobs().Count());
  return Status::Ok();
}

void Engine::ApplyStepEntry(StepEntryType type, const SeriesKey& name, int64_t step, uint32_t index,
                            double time, std::string_view value, std::string_view payload) {
  MutexLock lock(entries_mu_);
  auto& names = entries_[static_cast<size_t>(type)][name.run_key()];
  auto it = names.find(name.metric);
  const StepEntrySummary summary = it == names.end() ? StepEntrySummary{} : it->second;
  BlobChange change;
  Result<StepEntrySummary> updated =
      store_->entries(type).Put(name, summary, step, index, time, value, payload, &change);
  const EntryPlace place{name.project, name.run, name.metric, step, index};
  if (!updated.ok()) {
    logger_.Error(
        "persisting " + std::string(KindOf(type).noun) + "; written again at the next checkpoint",
        {{"run", name.run},
         {"name", name.metric},
         {"step", step},
         {"error", updated.status().ToString()}});
    if (names.empty()) entries_[static_cast<size_t>(type)].erase(name.run_key());
    MutexLock sealer_lock(sealer_mu_);
    unpersisted_entries_[static_cast<size_t>(type)][place] =
        UnpersistedEntry{time, std::string(value), std::string(payload)};
    NoteApplyStoreError(updated.status().WithContext(
        "persisting a " + std::string(KindOf(type).noun) + " of run " + name.run));
    return;
  }
  names[name.metric] = *updated;
  Add(&blob_totals_, change);
  MutexLock sealer_lock(sealer_mu_);
  unpersisted_entries_[static_cast<size_t>(type)].erase(place);  // replaced by this one
}

Status Engine::RetryRefusedEntries() {
  // Under entries_mu_ throughout, as the applier's writes: none lands between a retry's read of
  // the summary and its write.
  MutexLock entries_lock(entries_mu_);
  for (StepEntryType type : kAllStepEntryTypes) {
    std::map<EntryPlace, UnpersistedEntry> waiting;
    {
      MutexLock lock(sealer_mu_);
      waiting = unpersisted_entries_[static_cast<size_t>(type)];
    }
    for (const auto& [place, entry] : waiting) {
      const auto& [project, run, metric, step, index] = place;
      const SeriesKey name{project, run, metric};
      auto& names = entries_[static_cast<size_t>(type)][name.run_key()];
      auto it = names.find(metric);
      const StepEntrySummary summary = it == names.end() ? StepEntrySummary{} : it->second;
      BlobChange change;
      Result<StepEntrySummary> updated = store_->entries(type).Put(
          name, summary, step, index, entry.time, entry.value, entry.payload, &change);
      if (!updated.ok()) {
        if (names.empty()) entries_[static_cast<size_t>(type)].erase(name.run_key());
        return updated.status().WithContext("persisting a " + std::string(KindOf(type).noun) +
                                            " of run " + run);
      }
      names[metric] = *updated;
      Add(&blob_totals_, change);
      MutexLock lock(sealer_mu_);
      unpersisted_entries_[static_cast<size_t>(type)].erase(place);
    }
  }
  return Status::Ok();
}

Status Engine::CheckRunExists(const RunKey& run) const {
  ReaderMutexLock lock(runs_mu_);
  if (runs_.find(run) == runs_.end()) {
    return Status::NotFound("no run '" + run.run + "' in project '" + run.project + "'");
  }
  return Status::Ok();
}

bool Engine::HasStepEntryName(StepEntryType type, const SeriesKey& name) const {
  MutexLock lock(entries_mu_);
  const EntryIndex& index = entries_[static_cast<size_t>(type)];
  auto run = index.find(name.run_key());
  return run != index.end() && run->second.count(name.metric) > 0;
}

Status Engine::ScanStepEntries(StepEntryType type, const RunKey& run, const std::string& name,
                               int64_t from, int64_t to, const StepEntryVisitor& fn) const {
  TW_RETURN_IF_ERROR(CheckRunExists(run));
  std::vector<std::string> names;
  {
    MutexLock lock(entries_mu_);
    const EntryIndex& index = entries_[static_cast<size_t>(type)];
    auto it = index.find(run);
    if (it != index.end()) {
      for (const auto& [n, summary] : it->second) {
        if (name.empty() || n == name) names.push_back(n);
      }
    }
  }
  bool stopped = false;
  for (const std::string& n : names) {
    TW_RETURN_IF_ERROR(
        store_->entries(type).Scan({run.project, run.run, n}, from, to,
                                   [&](int64_t step, uint32_t index, std::string_view value) {
                                     stopped = !fn(n, step, index, value);
                                     return !stopped;
                                   }));
    if (stopped) break;
  }
  return Status::Ok();
}

void Engine::ListStepEntries(const RunKey& run, std::vector<MetricInfo>* out) const {
  MutexLock lock(entries_mu_);
  for (StepEntryType type : kAllStepEntryTypes) {
    const EntryIndex& index = entries_[static_cast<size_t>(type)];
    auto it = index.find(run);
    if (it == index.end()) continue;
    for (const auto& [name, summary] : it->second) {
      MetricInfo info;
      info.name = name;
      info.kind = std::string(KindOf(type).noun);
      info.count = summary.count;
      info.first_step = summary.first_step;
      info.last_step = summary.last_step;
      out->push_back(std::move(info));
    }
  }
}

Status Engine::DeleteRunStepEntries(const RunKey& run) {
  MutexLock lock(entries_mu_);
  {
    MutexLock sealer_lock(sealer_mu_);  // refused entries of the run are not written again
    for (auto& refused : unpersisted_entries_) {
      std::erase_if(refused, [&](const auto& e) {
        return std::get<0>(e.first) == run.project && std::get<1>(e.first) == run.run;
      });
    }
  }
  for (StepEntryType type : kAllStepEntryTypes) {
    EntryIndex& index = entries_[static_cast<size_t>(type)];
    auto names = index.find(run);
    if (names == index.end()) continue;
    // Kinds whose entries hold references go name by name, each one atomic batch: a crash in
    // between leaves whole names, and exact counts. The others go by range with the run.
    for (auto it = names->second.begin();
         KindOf(type).holds_references && it != names->second.end();) {
      StepEntrySummary kept;
      BlobChange change;
      Result<uint64_t> deleted = store_->entries(type).DeleteOlderThan(
          {run.project, run.run, it->first}, std::numeric_limits<double>::infinity(), &kept,
          &change);
      if (!deleted.ok()) {
        return deleted.status().WithContext("deleting " + std::string(KindOf(type).noun) +
                                            "s of '" + it->first + "'");
      }
      Add(&blob_totals_, change);
      it = names->second.erase(it);
    }
    index.erase(names);
  }
  return store_->DeleteRun(run.project, run.run);  // metadata, graph and the other kinds
}

Result<uint64_t> Engine::DeleteStepEntriesOlderThan(StepEntryType type, const std::string& project,
                                                    double cutoff) {
  uint64_t deleted = 0;
  // Held throughout: the applier must not change a summary between the scan and the delete.
  MutexLock lock(entries_mu_);
  {
    MutexLock sealer_lock(sealer_mu_);  // refused entries past their age are not written again
    std::erase_if(unpersisted_entries_[static_cast<size_t>(type)], [&](const auto& e) {
      return std::get<0>(e.first) == project && e.second.time < cutoff;
    });
  }
  EntryIndex& index = entries_[static_cast<size_t>(type)];
  for (auto run = index.lower_bound(RunKey{project, ""});
       run != index.end() && run->first.project == project;) {
    auto& names = run->second;
    for (auto it = names.begin(); it != names.end();) {
      if (!(it->second.min_time < cutoff)) {
        ++it;
        continue;
      }
      const SeriesKey name{project, run->first.run, it->first};
      StepEntrySummary kept;
      BlobChange change;
      Result<uint64_t> n = store_->entries(type).DeleteOlderThan(name, cutoff, &kept, &change);
      if (!n.ok()) {
        return n.status().WithContext(std::string(KindOf(type).noun) + " '" + name.metric +
                                      "' of run '" + name.run + "'");
      }
      Add(&blob_totals_, change);
      deleted += *n;
      if (kept.count == 0) {
        it = names.erase(it);
      } else {
        it->second = kept;
        ++it;
      }
    }
    run = names.empty() ? index.erase(run) : std::next(run);
  }
  return deleted;
}

}  // namespace trainwatch::storage
