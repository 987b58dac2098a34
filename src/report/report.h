// Training reports (docs/reports.md): everything one self-contained HTML file says about a run —
// its summary, the main charts with exact min/max envelopes, the alerts with their evidence, the
// config and its diff against compared runs, system and GPU utilisation — gathered from the query
// layer and the alert store (CollectReport), then written as HTML with inline CSS and SVG
// (RenderReportHtml, report_html.h). The route GET /api/v1/report (api/report_routes.cc) and,
// through it, `trainwatch report` use it; PDFs are printed from the HTML by Chromium (pdf.h).
//
// Everything here is plain values: no HTTP, no JSON output, no clock (the caller passes `now`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "alerting/alert_record.h"
#include "common/status.h"
#include "query/downsample.h"
#include "storage/engine.h"
#include "storage/run_info.h"

namespace trainwatch::alerting {
class AlertManager;
}
namespace trainwatch::query {
class Querier;
}

namespace trainwatch::report {

struct ReportRequest {
  std::string project;
  std::string run;
  std::vector<std::string> compare;      // other runs of the same project, shown beside it
  uint32_t chart_buckets = 240;          // buckets per chart (each drawn as its exact min..max)
  size_t max_charts = 8;                 // main charts (training metrics, most important first)
  size_t max_table_metrics = 40;         // rows of the metrics table
  size_t max_evidence_charts = 20;       // alerts that get a chart of their metric around the step
  double now = 0;                        // unix seconds: the duration of a running run ends here
  std::string generator = "trainwatch";  // who wrote it (name and version), in the footer
};

// One run's summary.
struct RunSummary {
  storage::RunInfo info;
  double duration = 0;  // seconds: end (or last write, or `now` while running) minus start
  bool has_steps = false;
  int64_t first_step = 0, last_step = 0;
  double steps_per_second = 0;  // 0 when unknown
};

// A training metric's values over the whole run, exact (from the buckets' min/max/count).
struct MetricStats {
  std::string name;
  uint64_t count = 0, nan_count = 0;
  int64_t last_step = 0;
  bool has_final = false;
  double final_value = 0;
  double min = 0, max = 0;  // over the finite values; meaningless when finite_count() is 0
  int64_t min_step = 0, max_step = 0;  // the bucket's first step holding the extreme (approximate)
  int direction = 0;  // -1: lower is better (losses, errors), +1 higher (accuracy), 0 neither
  uint64_t finite_count() const { return count - nan_count; }
};

// Where the time of a step went: time/<phase> metrics (tw.timer, log_step).
struct PhaseTime {
  std::string phase;         // "data", "forward", ..., "step"
  double mean_seconds = 0;   // per logged step
  double total_seconds = 0;  // sum over the run
  uint64_t count = 0;
};

// One series of a chart: a run's buckets on the chart's grid.
struct ChartSeries {
  std::string run;
  std::vector<query::Bucket> buckets;
};

struct Chart {
  std::string metric;
  query::XAxis axis = query::XAxis::kStep;
  query::BucketGrid grid;
  std::vector<ChartSeries> series;  // the main run first, then compared runs
  std::vector<double> marks;        // x positions to mark (alert steps), drawn as red lines
};

// A system metric over the run (sampled rows, against time).
struct SystemStat {
  std::string name;
  uint64_t count = 0;
  double mean = 0, min = 0, max = 0;
  double peak_at = 0;  // seconds since the start, of the bucket holding the max
  // Spans (seconds since start) where every sample was below the idle threshold; only for
  // utilisation metrics.
  std::vector<std::pair<double, double>> idle;
  double idle_seconds = 0;
  bool utilisation = false;
};

struct AlertEntry {
  alerting::AlertRecord alert;
  std::optional<Chart> evidence;  // the metric around the alert's step
};

// One row of the config table: a dotted path and each run's value (JSON text; nullopt: absent).
struct ConfigRow {
  std::string path;
  std::vector<std::optional<std::string>> values;  // main run first, then compared runs
  bool differs = false;
};

// One rank of a distributed run (docs/distributed.md): its progress and a few metrics' per-rank
// values over the whole run.
struct RankSummary {
  uint32_t rank = 0;
  std::string host;
  int64_t last_step = -1;
  double steps_per_second = 0;
  int64_t lag = 0;                           // steps behind the median rank
  std::string status;                        // running, dead, finished
  std::vector<std::optional<double>> means;  // one per Report::rank_metrics; nullopt: none
  std::vector<std::optional<double>> maxes;
};

struct Report {
  ReportRequest request;
  RunSummary run;
  std::vector<RunSummary> compared;
  std::vector<MetricStats> metrics;  // training metrics, most important first
  std::map<std::string, std::vector<MetricStats>> compared_metrics;  // by compared run id
  std::vector<PhaseTime> phases;
  std::vector<Chart> charts;
  std::vector<AlertEntry> alerts;         // by step
  bool alerts_available = true;           // false: the server keeps no alerts
  std::vector<ConfigRow> config;          // every path of every run's config
  uint32_t world_size = 0;                // 0: not a distributed run (no ranks section)
  std::vector<std::string> rank_metrics;  // the metrics compared across ranks
  std::vector<RankSummary> ranks;
  std::vector<SystemStat> system;
  std::vector<Chart> system_charts;
  double generated_at = 0;
};

// Gathers the report of `request.run`. NotFound naming the run (or a compared run) when it does not
// exist; InvalidArgument when a compared run is the run itself or appears twice. `alerts` may be
// null (no alerts section). Every read goes through `querier`.
Result<Report> CollectReport(const query::Querier& querier, const alerting::AlertManager* alerts,
                             const ReportRequest& request);

// The per-rank summary of a distributed run into report->world_size, rank_metrics and ranks
// (collect_ranks.cc); nothing for a run without ranks. `report->metrics` must be filled.
Status CollectRanks(const query::Querier& querier, const ReportRequest& request,
                    const std::vector<storage::MetricInfo>& metrics, Report* report);

// Which way is better for a metric, from its name: -1 for losses and errors, +1 for accuracies and
// scores, 0 otherwise.
int MetricDirection(const std::string& name);

// Flattens configs to dotted paths (arrays stay whole values) and lines them up, one column per
// config; rows sorted by path, `differs` where the columns are not all equal.
std::vector<ConfigRow> ConfigTable(const std::vector<const nlohmann::json*>& configs);

}  // namespace trainwatch::report
