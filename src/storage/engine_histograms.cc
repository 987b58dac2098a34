// Engine: histograms, a kind of per-step entry (engine_step_entries.cc): their values encoded as
// they are applied and decoded as they are read.
#include "storage/engine.h"

namespace trainwatch::storage {

void Engine::ApplyHistograms(const v1::RunBatch& batch) {
  for (const v1::Histogram& h : batch.histograms()) {
    Histogram value;
    value.step = h.step();
    value.time = h.time();
    value.edges.assign(h.edges().begin(), h.edges().end());
    value.counts.assign(h.counts().begin(), h.counts().end());
    ApplyStepEntry(StepEntryType::kHistogram, {batch.project(), batch.run(), h.name()}, h.step(),
                   /*index=*/0, h.time(), EncodeHistogram(value), /*payload=*/{});
  }
}

Status Engine::ReadHistograms(const SeriesKey& key, const HistogramReadOptions& options,
                              std::vector<Histogram>* out) const {
  TW_RETURN_IF_ERROR(CheckRunExists(key.run_key()));
  if (!HasStepEntryName(StepEntryType::kHistogram, key)) {
    return Status::NotFound("no histogram '" + key.metric + "' in run '" + key.run + "'");
  }
  Status decoded;
  TW_RETURN_IF_ERROR(ScanStepEntries(
      StepEntryType::kHistogram, key.run_key(), key.metric, options.from_step, options.to_step,
      [&](const std::string&, int64_t step, uint32_t, std::string_view value) {
        if (out->size() >= options.limit) return false;
        Histogram h;
        decoded = DecodeHistogram(value, step, &h);
        if (!decoded.ok()) return false;
        out->push_back(std::move(h));
        return true;
      }));
  return decoded.WithContext("histogram '" + key.metric + "' of run '" + key.run + "'");
}

Result<uint64_t> Engine::DeleteHistogramsOlderThan(const std::string& project, double cutoff) {
  return DeleteStepEntriesOlderThan(StepEntryType::kHistogram, project, cutoff);
}

}  // namespace trainwatch::storage
