// Querier: every read the REST routes make of runs and scalar series — run search, one run and its
// metrics, raw and downsampled series, points hidden by rewinds, export windows. The routes
// (api/run_routes.cc, series_routes.cc, export_routes.cc) parse a request into these calls and
// write the answer as JSON; a Querier knows nothing of HTTP or JSON.
//
// LocalQuerier (local_querier.h) answers from this server's Engine. Cluster mode answers the same
// calls by fan-out: a FanOutQuerier over one Querier per node, merging as follows (docs/query.md):
// - SearchRuns: runs are unioned. Each node is asked for its first offset + limit matches
//   (offset 0), with a sort metric put first in `latest`; the union is ordered with SortRuns
//   (run_search.h) and paged, the sort metric dropped again from `latest` unless it was asked
//   for, and `total` is the sum of the nodes' totals (a run lives on one node).
// - GetRun, ListMetrics, ReadSuperseded, PlanExport, ReadExportWindow: a run and all its series
//   belong to one node (its owner): the call goes to the owner; elsewhere the run is NotFound.
// - XRange: the union of the nodes' ranges (min of lo, max of hi); NotFound only if every node
//   says so.
// - Downsample: the grid must be the same everywhere, so the fan-out first closes the selection's
//   open ends with XRange and GridFor (series_request.h), then asks every owner with from/to set
//   to that grid. Each run's buckets come from its owner; were a series ever split over nodes, the
//   buckets of one index merge exactly with Bucket::Merge (counts and sums add, min of mins, max of
//   maxes, first/last by step).
// - AggregateRanks, RankMatrix, ListRanks: a run and its ranks live on one node (its owner): the
//   call goes to the owner. Were a run's ranks ever split over nodes, the matrix rows would union
//   and the aggregates' count/min/max/mean would merge exactly, the percentiles not (each node
//   would have to send its values).
// - ReadRaw: the limit is shared by the runs in order, so runs are asked in the selection's order,
//   consecutive runs of one owner together, each call with what the earlier runs left
//   (limit minus their RawSeries::read).
//
// Thread-safety: every method may be called concurrently (the routes run on the query threads).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "query/export.h"
#include "query/rank_query.h"
#include "query/run_search.h"
#include "query/series_request.h"
#include "storage/engine.h"

namespace trainwatch::query {

class Querier {
 public:
  virtual ~Querier() = default;

  // --- runs ---
  // Matching runs, sorted and paged. InvalidArgument for a bad regex or sort key.
  virtual Result<RunPage> SearchRuns(const RunSearch& search) const = 0;
  // NotFound "no run 'R' in project 'P'".
  virtual Result<storage::RunInfo> GetRun(const storage::RunKey& run) const = 0;
  // A run's scalar metrics, histograms, image and text tags, by name (none for an unknown run).
  virtual std::vector<storage::MetricInfo> ListMetrics(const storage::RunKey& run) const = 0;

  // --- series ---
  // One RawSeries per selected run, in order; a run's failure is in its status.
  virtual std::vector<RawSeries> ReadRaw(const RawRequest& request) const = 0;
  // The joint x range of `metric` over the selected runs (from/to ignored). NotFound if none of
  // them has a point of it.
  virtual Result<AxisRange> XRange(const SeriesSelection& selection,
                                   const std::string& metric) const = 0;
  // One DownsampledMetric per requested metric, in order; a run's failure is in its status.
  // InvalidArgument "to is below from" when a metric's grid would be empty.
  virtual Result<std::vector<DownsampledMetric>> Downsample(
      const DownsampleRequest& request) const = 0;
  // The points of a series that rewinds hid, by (step, timeline). NotFound for an unknown series.
  virtual Result<std::vector<storage::SupersededPoint>> ReadSuperseded(
      const storage::SeriesKey& key) const = 0;

  // --- distributed runs (docs/distributed.md) ---
  // Across-rank statistics of one metric per bucket of steps. NotFound if the run is unknown or no
  // rank has the metric; InvalidArgument "to is below from".
  virtual Result<RankAggregates> AggregateRanks(const RankRequest& request) const = 0;
  // Each rank's buckets of one metric on one step grid; errors as AggregateRanks.
  virtual Result<RankMatrix> RankMatrixOf(const RankRequest& request) const = 0;
  // The run's ranks table at server time `now` (empty for a run that is not distributed).
  // NotFound if the run is unknown.
  virtual Result<RankTable> ListRanks(const storage::RunKey& run, double now) const = 0;

  // --- export ---
  // What exporting the run reads (no metrics for an unknown run).
  virtual Result<ExportPlan> PlanExport(const storage::RunKey& run) const = 0;
  // The plan's points with steps in [from_step, to_step], in ExportCell order, appended to *out.
  // A metric deleted since the plan is skipped; any other failure is returned.
  virtual Status ReadExportWindow(const ExportPlan& plan, int64_t from_step, int64_t to_step,
                                  std::vector<ExportCell>* out) const = 0;
};

}  // namespace trainwatch::query
