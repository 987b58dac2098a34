// The per-rank summary of a distributed run: the ranks table and, per rank, the mean and maximum of
// the step time, the time to the collective and the main training metric (one bucket each).
#include <algorithm>

#include "query/querier.h"
#include "report/report.h"

namespace trainwatch::report {

Status CollectRanks(const query::Querier& querier, const ReportRequest& request,
                    const std::vector<storage::MetricInfo>& metrics, Report* report) {
  Result<query::RankTable> table = querier.ListRanks({request.project, request.run}, request.now);
  if (!table.ok() || table->ranks.empty()) return Status::Ok();
  report->world_size = std::max<uint32_t>(table->world_size, table->ranks.size());
  auto has = [&](const std::string& name) {
    return std::any_of(metrics.begin(), metrics.end(), [&](const storage::MetricInfo& m) {
      return m.name == name && m.kind == "scalar";
    });
  };
  for (const char* name : {"time/step", "dist/time_to_collective"}) {
    if (has(name)) report->rank_metrics.push_back(name);
  }
  if (!report->metrics.empty()) report->rank_metrics.push_back(report->metrics.front().name);
  for (const query::RankRow& row : table->ranks) {
    RankSummary r;
    r.rank = row.state.rank;
    r.host = row.state.host;
    r.last_step = row.state.last_step;
    r.steps_per_second = row.steps_per_second;
    r.lag = row.lag;
    r.status = std::string(query::RankLivenessName(row.liveness));
    r.means.resize(report->rank_metrics.size());
    r.maxes.resize(report->rank_metrics.size());
    report->ranks.push_back(std::move(r));
  }
  for (size_t i = 0; i < report->rank_metrics.size(); ++i) {
    query::RankRequest req;
    req.metric = {request.project, request.run, report->rank_metrics[i], 0};
    req.buckets = 1;
    Result<query::RankMatrix> matrix = querier.RankMatrixOf(req);
    if (!matrix.ok()) continue;
    for (const query::RankMatrixRow& row : matrix->rows) {
      for (RankSummary& r : report->ranks) {
        if (r.rank != row.rank || row.buckets.empty()) continue;
        const query::Bucket& b = row.buckets.front();
        if (b.count == b.nan_count) continue;
        r.means[i] = b.sum / static_cast<double>(b.count - b.nan_count);
        r.maxes[i] = b.max;
      }
    }
  }
  return Status::Ok();
}

}  // namespace trainwatch::report
