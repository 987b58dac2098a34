// LocalQuerier: runs, superseded points and export windows.
#include "query/local_querier.h"

#include <algorithm>

namespace trainwatch::query {

Result<RunPage> LocalQuerier::SearchRuns(const RunSearch& search) const {
  return query::SearchRuns(engine_, search);
}

Result<storage::RunInfo> LocalQuerier::GetRun(const storage::RunKey& run) const {
  std::optional<storage::RunInfo> info = engine_.GetRun(run.project, run.run);
  if (!info) return Status::NotFound("no run '" + run.run + "' in project '" + run.project + "'");
  return std::move(*info);
}

std::vector<storage::MetricInfo> LocalQuerier::ListMetrics(const storage::RunKey& run) const {
  return engine_.ListMetrics(run.project, run.run);
}

Result<std::vector<storage::SupersededPoint>> LocalQuerier::ReadSuperseded(
    const storage::SeriesKey& key) const {
  std::vector<storage::SupersededPoint> points;
  TW_RETURN_IF_ERROR(engine_.ReadSuperseded(key, &points));
  return points;
}

Result<ExportPlan> LocalQuerier::PlanExport(const storage::RunKey& run) const {
  ExportPlan plan;
  plan.run = run;
  std::optional<storage::RunInfo> info = engine_.GetRun(run.project, run.run);
  plan.distributed = info && info->rank_count > 0;
  for (storage::MetricInfo& m : engine_.ListMetrics(run.project, run.run)) {
    if (m.kind != "scalar" || m.count == 0) continue;  // histograms have no /write line form
    std::vector<uint32_t> ranks{0};
    if (plan.distributed) {
      // Every rank's steps count: a rank may be ahead of (or behind) the run-level view.
      ranks = engine_.MetricRanks({run.project, run.run, m.name});
      for (uint32_t rank : ranks) {
        storage::SeriesExtent extent;
        if (!engine_.ReadExtent({run.project, run.run, m.name, rank}, &extent).ok()) continue;
        plan.first_step = std::min(plan.first_step, extent.first_step);
        plan.last_step = std::max(plan.last_step, extent.last_step);
      }
    }
    plan.first_step = std::min(plan.first_step, m.first_step);
    plan.last_step = std::max(plan.last_step, m.last_step);
    plan.points += m.count * std::max<size_t>(1, ranks.size());  // for the window size
    plan.metrics.push_back(std::move(m.name));
    plan.ranks.push_back(std::move(ranks));
  }
  return plan;
}

Status LocalQuerier::ReadExportWindow(const ExportPlan& plan, int64_t from_step, int64_t to_step,
                                      std::vector<ExportCell>* out) const {
  const size_t start = out->size();
  storage::SeriesReadOptions options;
  options.from_step = from_step;
  options.to_step = to_step;
  std::vector<storage::Point> points;
  static const std::vector<uint32_t> kRunLevel{0};
  for (uint32_t m = 0; m < plan.metrics.size(); ++m) {
    for (uint32_t rank : m < plan.ranks.size() ? plan.ranks[m] : kRunLevel) {
      points.clear();
      Status s = engine_.ReadSeries({plan.run.project, plan.run.run, plan.metrics[m], rank},
                                    options, &points);
      if (s.code() == StatusCode::kNotFound) continue;  // deleted meanwhile
      TW_RETURN_IF_ERROR(s);
      for (const storage::Point& p : points) out->push_back({p.step, p.time, m, p.value, rank});
    }
  }
  // Stable: within one (rank, step, time) the metrics stay in the plan's order.
  std::stable_sort(out->begin() + start, out->end(), [](const ExportCell& a, const ExportCell& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.step != b.step ? a.step < b.step : a.time < b.time;
  });
  return Status::Ok();
}

}  // namespace trainwatch::query
