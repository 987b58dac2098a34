#include "influx/influx_catalog.h"

#include <limits>
#include <utility>

namespace trainwatch::influx {

void SplitMetric(const std::string& metric, std::string* base,
                 std::map<std::string, std::string>* tags) {
  *base = metric;
  tags->clear();
  if (metric.empty() || metric.back() != '}') return;
  const size_t open = metric.rfind('{');
  if (open == std::string::npos || open == 0) return;
  std::map<std::string, std::string> parsed;
  const std::string inner = metric.substr(open + 1, metric.size() - open - 2);
  size_t start = 0;
  while (start <= inner.size()) {
    size_t comma = inner.find(',', start);
    if (comma == std::string::npos) comma = inner.size();
    const std::string piece = inner.substr(start, comma - start);
    const size_t eq = piece.find('=');
    if (eq == std::string::npos || eq == 0) return;
    parsed[piece.substr(0, eq)] = piece.substr(eq + 1);
    start = comma + 1;
  }
  *base = metric.substr(0, open);
  *tags = std::move(parsed);
}

Result<std::vector<FieldSeries>> LoadCatalog(const query::Querier& querier,
                                             const std::string& project) {
  query::RunSearch search;
  search.project = project;
  search.sort = "name";
  search.limit = size_t{1} << 30;
  Result<query::RunPage> page = querier.SearchRuns(search);
  if (!page.ok()) return page.status();
  // A project exists once written to (CREATE DATABASE creates nothing).
  if (page->rows.empty()) return Status::NotFound("database not found: " + project);
  std::vector<FieldSeries> out;
  for (const query::RunRow& row : page->rows) {
    const storage::RunInfo& run = row.info;
    for (const storage::MetricInfo& m : querier.ListMetrics({project, run.id})) {
      if (m.kind != "scalar") continue;
      std::string base;
      std::map<std::string, std::string> suffix;
      SplitMetric(m.name, &base, &suffix);
      // A host's samples (the run the write mapping made for Telegraf's measurements) are not
      // training metrics.
      if (run.id != "host:" + run.host) {
        FieldSeries training{kTrainingMeasurement, "value", suffix, run.id, m.name};
        training.tags["metric_name"] = base;
        training.tags["run"] = run.id;
        if (!run.host.empty()) training.tags["host"] = run.host;
        FieldSeries step = training;
        step.field = "step";
        step.is_step = true;
        out.push_back(std::move(training));
        out.push_back(std::move(step));
      }
      const size_t slash = base.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == base.size()) continue;
      FieldSeries own{base.substr(0, slash), base.substr(slash + 1), suffix, run.id, m.name};
      if (!run.host.empty()) own.tags["host"] = run.host;
      // The run tag, unless the run's name is one the write mapping made up.
      if (run.id != "host:" + run.host && run.id != own.measurement) own.tags["run"] = run.id;
      out.push_back(std::move(own));
    }
  }
  return out;
}

}  // namespace trainwatch::influx
