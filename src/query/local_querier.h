// LocalQuerier: the Querier over this server's Engine. Downsampling happens here: the engine hands
// over a series' chunk summaries and points (Engine::ScanSeries) and a Downsampler folds them.
//
// Thread-safe, as the Engine is. Holds no state of its own.
#pragma once

#include "query/querier.h"
#include "storage/engine.h"

namespace trainwatch::query {

class LocalQuerier final : public Querier {
 public:
  // `engine` must outlive the querier.
  explicit LocalQuerier(const storage::Engine& engine) : engine_(engine) {}
  LocalQuerier(const LocalQuerier&) = delete;
  LocalQuerier& operator=(const LocalQuerier&) = delete;

  // local_querier.cc
  Result<RunPage> SearchRuns(const RunSearch& search) const override;
  Result<storage::RunInfo> GetRun(const storage::RunKey& run) const override;
  std::vector<storage::MetricInfo> ListMetrics(const storage::RunKey& run) const override;
  Result<std::vector<storage::SupersededPoint>> ReadSuperseded(
      const storage::SeriesKey& key) const override;
  Result<ExportPlan> PlanExport(const storage::RunKey& run) const override;
  Status ReadExportWindow(const ExportPlan& plan, int64_t from_step, int64_t to_step,
                          std::vector<ExportCell>* out) const override;

  // local_querier_ranks.cc
  Result<RankAggregates> AggregateRanks(const RankRequest& request) const override;
  Result<RankMatrix> RankMatrixOf(const RankRequest& request) const override;
  Result<RankTable> ListRanks(const storage::RunKey& run, double now) const override;

  // local_querier_series.cc
  std::vector<RawSeries> ReadRaw(const RawRequest& request) const override;
  Result<AxisRange> XRange(const SeriesSelection& selection,
                           const std::string& metric) const override;
  Result<std::vector<DownsampledMetric>> Downsample(
      const DownsampleRequest& request) const override;

 private:
  // The x of a run's points on `axis` is shifted by this: its start time on the relative axis,
  // else 0. NotFound if the run is unknown (only asked on the relative axis).
  Result<double> OriginOf(const std::string& project, const std::string& run, XAxis axis) const;
  // One run's raw points within the selection, `*budget` at most, taken from it.
  RawSeries ReadRawRun(const RawRequest& request, const std::string& run, size_t* budget) const;
  // One run's series of `metric` folded onto `grid`.
  DownsampledSeries DownsampleRun(const SeriesSelection& selection, const std::string& run,
                                  const std::string& metric, const BucketGrid& grid) const;

  // The grid of a rank request (its open ends closed by the ranks' joint step range) and the
  // ranks that have the metric. NotFound if none has.
  Result<BucketGrid> RankGrid(const RankRequest& request, std::vector<uint32_t>* ranks) const;

  const storage::Engine& engine_;
};

}  // namespace trainwatch::query
