// CollectReport: the report's numbers, every one read through the Querier (and the alert store).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "alerting/alert_manager.h"
#include "query/querier.h"
#include "report/report.h"

namespace trainwatch::report {
namespace {

using query::Bucket;
using query::XAxis;

constexpr double kIdlePercent = 10;  // a utilisation below this is idle

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

bool IsSystem(const std::string& name) { return name.rfind("system/", 0) == 0; }
bool IsPhase(const std::string& name) { return name.rfind("time/", 0) == 0; }

// Lower ranks first: training losses, validation losses, accuracies, learning rates, gradient
// norms, the rest; per-batch series of a per-epoch metric last.
int Importance(const std::string& name) {
  const std::string n = Lower(name);
  int rank = 5;
  const bool eval = Contains(n, "val") || Contains(n, "eval") || Contains(n, "test");
  if (Contains(n, "loss")) {
    rank = eval ? 1 : 0;
  } else if (MetricDirection(name) > 0) {
    rank = 2;
  } else if (n == "lr" || Contains(n, "learning_rate") || n.ends_with("/lr")) {
    rank = 3;
  } else if (Contains(n, "grad")) {
    rank = 4;
  }
  if (n.rfind("batch/", 0) == 0) rank += 6;
  return rank;
}

double DurationOf(const storage::RunInfo& info, double now) {
  if (info.start_time <= 0) return 0;
  double end = info.end_time;
  if (end <= 0) end = info.status == storage::RunStatus::kRunning ? now : info.last_write_time;
  if (end <= 0) end = info.last_write_time;
  return std::max(0.0, end - info.start_time);
}

RunSummary Summarize(const storage::RunInfo& info, const std::vector<storage::MetricInfo>& metrics,
                     double now) {
  RunSummary s;
  s.info = info;
  s.duration = DurationOf(info, now);
  for (const storage::MetricInfo& m : metrics) {
    if (m.kind != "scalar" || IsSystem(m.name) || m.count == 0) continue;
    if (!s.has_steps) {
      s.first_step = m.first_step;
      s.last_step = m.last_step;
      s.has_steps = true;
    }
    s.first_step = std::min(s.first_step, m.first_step);
    s.last_step = std::max(s.last_step, m.last_step);
  }
  if (s.has_steps && s.duration > 0) {
    s.steps_per_second = static_cast<double>(s.last_step - s.first_step) / s.duration;
  }
  return s;
}

// The training metrics (scalars outside system/ and time/), most important first.
std::vector<const storage::MetricInfo*> TrainingMetrics(
    const std::vector<storage::MetricInfo>& metrics) {
  std::vector<const storage::MetricInfo*> out;
  for (const storage::MetricInfo& m : metrics) {
    if (m.kind == "scalar" && !IsSystem(m.name) && !IsPhase(m.name)) out.push_back(&m);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto* a, const auto* b) {
    int ra = Importance(a->name), rb = Importance(b->name);
    return ra != rb ? ra < rb : a->name < b->name;
  });
  return out;
}

query::SeriesSelection Selection(const std::string& project, std::vector<std::string> runs,
                                 XAxis axis = XAxis::kStep) {
  query::SeriesSelection s;
  s.project = project;
  s.runs = std::move(runs);
  s.axis = axis;
  return s;
}

// Exact statistics from the buckets of one series.
MetricStats StatsOf(const std::string& name, const std::vector<Bucket>& buckets,
                    const storage::MetricInfo* info) {
  MetricStats st;
  st.name = name;
  st.direction = MetricDirection(name);
  bool any = false;
  for (const Bucket& b : buckets) {
    st.count += b.count;
    st.nan_count += b.nan_count;
    if (b.count == b.nan_count) continue;
    if (!any || b.min < st.min) st.min = b.min, st.min_step = b.first_step;
    if (!any || b.max > st.max) st.max = b.max, st.max_step = b.first_step;
    any = true;
  }
  if (info != nullptr) {
    st.last_step = info->last_step;
    st.has_final = info->has_latest;
    st.final_value = info->latest.value;
  } else if (!buckets.empty()) {
    st.last_step = buckets.back().last_step;
    st.has_final = true;
    st.final_value = buckets.back().last;
  }
  return st;
}

// The exact step of a bucket's extreme: reads the points of the bucket that holds it.
void LocateExtremes(const query::Querier& querier, const std::string& project,
                    const std::string& run, const std::vector<Bucket>& buckets, MetricStats* st) {
  auto locate = [&](double target, int64_t* step) {
    for (const Bucket& b : buckets) {
      if (b.count == b.nan_count || (b.min != target && b.max != target)) continue;
      query::RawRequest raw;
      raw.selection = Selection(project, {run});
      raw.selection.from = static_cast<double>(b.first_step);
      raw.selection.to = static_cast<double>(b.last_step);
      raw.metric = st->name;
      raw.limit = b.count + 1;
      std::vector<query::RawSeries> got = querier.ReadRaw(raw);
      if (got.empty() || !got[0].status.ok()) return;
      for (const storage::Point& p : got[0].points) {
        if (p.value == target) {
          *step = p.step;
          return;
        }
      }
      return;
    }
  };
  if (st->finite_count() == 0) return;
  locate(st->min, &st->min_step);
  locate(st->max, &st->max_step);
}

Result<std::vector<MetricStats>> RunStats(const query::Querier& querier, const std::string& project,
                                          const std::string& run,
                                          const std::vector<std::string>& names,
                                          const std::vector<storage::MetricInfo>& infos,
                                          uint32_t buckets, bool locate) {
  std::vector<MetricStats> out;
  if (names.empty()) return out;
  query::DownsampleRequest req;
  req.selection = Selection(project, {run});
  req.metrics = names;
  req.buckets = buckets;
  TW_ASSIGN_OR_RETURN(std::vector<query::DownsampledMetric> got, querier.Downsample(req));
  for (const query::DownsampledMetric& m : got) {
    if (m.series.empty() || !m.series[0].status.ok()) continue;
    const storage::MetricInfo* info = nullptr;
    for (const storage::MetricInfo& i : infos) {
      if (i.name == m.metric && i.kind == "scalar") info = &i;
    }
    MetricStats st = StatsOf(m.metric, m.series[0].buckets, info);
    if (locate) LocateExtremes(querier, project, run, m.series[0].buckets, &st);
    out.push_back(std::move(st));
  }
  return out;
}

std::vector<PhaseTime> Phases(const std::vector<MetricStats>& stats,
                              const std::vector<std::vector<Bucket>>& buckets) {
  std::vector<PhaseTime> out;
  for (size_t i = 0; i < stats.size(); ++i) {
    PhaseTime p;
    p.phase = stats[i].name.substr(5);
    for (const Bucket& b : buckets[i]) p.total_seconds += b.sum;
    p.count = stats[i].finite_count();
    if (p.count > 0) p.mean_seconds = p.total_seconds / static_cast<double>(p.count);
    out.push_back(std::move(p));
  }
  return out;
}

SystemStat SystemStatOf(const query::DownsampledMetric& m) {
  SystemStat st;
  st.name = m.metric;
  st.utilisation = m.metric.ends_with("utilization_percent") || m.metric == "system/cpu_percent";
  const std::vector<Bucket>& buckets = m.series[0].buckets;
  double sum = 0;
  uint64_t finite = 0;
  bool any = false;
  const double width = m.grid.Width();
  std::optional<double> idle_from;
  double idle_to = 0;
  auto close_idle = [&] {
    if (!idle_from) return;
    st.idle.emplace_back(*idle_from - m.grid.from, idle_to - m.grid.from);
    st.idle_seconds += idle_to - *idle_from;
    idle_from.reset();
  };
  for (const Bucket& b : buckets) {
    st.count += b.count;
    if (b.count == b.nan_count) continue;
    sum += b.sum;
    finite += b.count - b.nan_count;
    if (!any || b.min < st.min) st.min = b.min;
    if (!any || b.max > st.max) {
      st.max = b.max;
      st.peak_at = width * (b.index + 0.5);
    }
    any = true;
    if (!st.utilisation) continue;
    const double left = m.grid.from + width * b.index;
    if (b.max < kIdlePercent) {
      if (!idle_from) idle_from = left;
      idle_to = left + width;
    } else {
      close_idle();
    }
  }
  close_idle();
  if (finite > 0) st.mean = sum / static_cast<double>(finite);
  return st;
}

// The system charts worth drawing: machine CPU, each GPU's utilisation, memory.
bool SystemChartWanted(const std::string& name) {
  return name == "system/cpu_percent" || name == "system/memory_percent" ||
         (name.rfind("system/gpu/", 0) == 0 &&
          (name.ends_with("/utilization_percent") || name.ends_with("/memory_percent")));
}

void FlattenInto(const nlohmann::json& j, const std::string& prefix,
                 std::map<std::string, std::string>* out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      FlattenInto(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
    return;
  }
  (*out)[prefix.empty() ? "(config)" : prefix] = j.dump();
}

}  // namespace

int MetricDirection(const std::string& name) {
  const std::string n = Lower(name);
  for (const char* part : {"loss", "error", "err", "perplexity", "ppl", "mse", "mae", "nll"}) {
    if (Contains(n, part)) return -1;
  }
  for (const char* part :
       {"acc", "f1", "auc", "precision", "recall", "score", "iou", "bleu", "rouge", "reward"}) {
    if (Contains(n, part)) return 1;
  }
  return 0;
}

std::vector<ConfigRow> ConfigTable(const std::vector<const nlohmann::json*>& configs) {
  std::vector<std::map<std::string, std::string>> flat(configs.size());
  std::set<std::string> paths;
  for (size_t i = 0; i < configs.size(); ++i) {
    if (configs[i] != nullptr && !(configs[i]->is_object() && configs[i]->empty())) {
      FlattenInto(*configs[i], "", &flat[i]);
    }
    for (const auto& [path, value] : flat[i]) paths.insert(path);
  }
  std::vector<ConfigRow> rows;
  for (const std::string& path : paths) {
    ConfigRow row;
    row.path = path;
    for (const auto& f : flat) {
      auto it = f.find(path);
      row.values.push_back(it == f.end() ? std::nullopt : std::optional<std::string>(it->second));
    }
    for (const auto& v : row.values) row.differs = row.differs || v != row.values[0];
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<Report> CollectReport(const query::Querier& querier, const alerting::AlertManager* alerts,
                             const ReportRequest& request) {
  Report report;
  report.request = request;
  report.generated_at = request.now;
  const std::string& project = request.project;
  const uint32_t nb = std::max<uint32_t>(request.chart_buckets, 8);

  // The runs.
  TW_ASSIGN_OR_RETURN(storage::RunInfo info, querier.GetRun({project, request.run}));
  const std::vector<storage::MetricInfo> metrics = querier.ListMetrics({project, request.run});
  report.run = Summarize(info, metrics, request.now);
  std::set<std::string> seen{request.run};
  std::vector<std::vector<storage::MetricInfo>> compared_infos;
  for (const std::string& other : request.compare) {
    if (other == request.run) {
      return Status::InvalidArgument("compare: '" + other + "' is the run the report is about");
    }
    if (!seen.insert(other).second) {
      return Status::InvalidArgument("compare: '" + other + "' is listed twice");
    }
    Result<storage::RunInfo> o = querier.GetRun({project, other});
    if (!o.ok()) return o.status().WithContext("compare");
    compared_infos.push_back(querier.ListMetrics({project, other}));
    report.compared.push_back(Summarize(*o, compared_infos.back(), request.now));
  }

  // The training metrics' statistics, and where the time of a step went.
  const std::vector<const storage::MetricInfo*> training = TrainingMetrics(metrics);
  std::vector<std::string> table;
  for (const auto* m : training) {
    if (table.size() < request.max_table_metrics) table.push_back(m->name);
  }
  TW_ASSIGN_OR_RETURN(report.metrics,
                      RunStats(querier, project, request.run, table, metrics, nb, true));
  for (size_t i = 0; i < report.compared.size(); ++i) {
    TW_ASSIGN_OR_RETURN(report.compared_metrics[report.compared[i].info.id],
                        RunStats(querier, project, report.compared[i].info.id, table,
                                 compared_infos[i], nb, false));
  }
  std::vector<std::string> phases;
  for (const storage::MetricInfo& m : metrics) {
    if (m.kind == "scalar" && IsPhase(m.name)) phases.push_back(m.name);
  }
  if (!phases.empty()) {
    query::DownsampleRequest req;
    req.selection = Selection(project, {request.run});
    req.metrics = phases;
    req.buckets = 1;
    TW_ASSIGN_OR_RETURN(std::vector<query::DownsampledMetric> got, querier.Downsample(req));
    std::vector<MetricStats> stats;
    std::vector<std::vector<Bucket>> buckets;
    for (const query::DownsampledMetric& m : got) {
      if (m.series.empty() || !m.series[0].status.ok()) continue;
      stats.push_back(StatsOf(m.metric, m.series[0].buckets, nullptr));
      buckets.push_back(m.series[0].buckets);
    }
    report.phases = Phases(stats, buckets);
  }

  // Alerts, by step.
  report.alerts_available = alerts != nullptr;
  if (alerts != nullptr) {
    alerting::AlertQuery q;
    q.project = project;
    q.run = request.run;
    q.limit = 1000;
    for (alerting::AlertRecord& a : alerts->List(q)) report.alerts.push_back({std::move(a), {}});
    std::sort(report.alerts.begin(), report.alerts.end(), [](const auto& a, const auto& b) {
      return a.alert.step != b.alert.step ? a.alert.step < b.alert.step : a.alert.id < b.alert.id;
    });
  }

  // The main charts: the run and the compared runs on one grid per metric.
  std::vector<std::string> runs{request.run};
  for (const std::string& other : request.compare) runs.push_back(other);
  {
    query::DownsampleRequest req;
    req.selection = Selection(project, runs);
    for (const auto* m : training) {
      if (req.metrics.size() < request.max_charts) req.metrics.push_back(m->name);
    }
    req.buckets = nb;
    if (!req.metrics.empty()) {
      TW_ASSIGN_OR_RETURN(std::vector<query::DownsampledMetric> got, querier.Downsample(req));
      for (query::DownsampledMetric& m : got) {
        Chart chart;
        chart.metric = m.metric;
        chart.grid = m.grid;
        for (query::DownsampledSeries& s : m.series) {
          if (s.status.ok()) chart.series.push_back({s.run, std::move(s.buckets)});
        }
        for (const AlertEntry& a : report.alerts) {
          if (a.alert.metric == m.metric) chart.marks.push_back(static_cast<double>(a.alert.step));
        }
        report.charts.push_back(std::move(chart));
      }
    }
  }

  // Each alert's evidence: its metric around the step.
  const int64_t span = report.run.has_steps ? report.run.last_step - report.run.first_step : 0;
  const int64_t half = std::max<int64_t>(10, span / 20);
  size_t drawn = 0;
  for (AlertEntry& a : report.alerts) {
    if (drawn >= request.max_evidence_charts || a.alert.metric.empty()) continue;
    bool scalar = false;
    for (const storage::MetricInfo& m : metrics)
      scalar = scalar || (m.name == a.alert.metric && m.kind == "scalar");
    if (!scalar) continue;
    query::DownsampleRequest req;
    req.selection = Selection(project, {request.run});
    req.selection.from = static_cast<double>(a.alert.step - half);
    req.selection.to = static_cast<double>(a.alert.step + half);
    req.metrics = {a.alert.metric};
    req.buckets = static_cast<uint32_t>(std::min<int64_t>(2 * half + 1, 80));
    Result<std::vector<query::DownsampledMetric>> got = querier.Downsample(req);
    if (!got.ok() || got->empty() || got->front().series.empty() ||
        !got->front().series[0].status.ok()) {
      continue;
    }
    Chart chart;
    chart.metric = a.alert.metric;
    chart.grid = got->front().grid;
    chart.series.push_back({request.run, std::move(got->front().series[0].buckets)});
    chart.marks.push_back(static_cast<double>(a.alert.step));
    a.evidence = std::move(chart);
    ++drawn;
  }

  // The config and its differences.
  std::vector<const nlohmann::json*> configs{&report.run.info.config};
  for (const RunSummary& c : report.compared) configs.push_back(&c.info.config);
  report.config = ConfigTable(configs);

  // Distributed runs: the ranks.
  TW_RETURN_IF_ERROR(CollectRanks(querier, request, metrics, &report));

  // System and GPU metrics, against the time since the start.
  std::vector<std::string> system;
  for (const storage::MetricInfo& m : metrics) {
    if (m.kind == "scalar" && IsSystem(m.name) && m.count > 0) system.push_back(m.name);
  }
  if (!system.empty()) {
    query::DownsampleRequest req;
    req.selection = Selection(project, {request.run}, XAxis::kRelativeTime);
    req.metrics = system;
    req.buckets = nb;
    TW_ASSIGN_OR_RETURN(std::vector<query::DownsampledMetric> got, querier.Downsample(req));
    for (query::DownsampledMetric& m : got) {
      if (m.series.empty() || !m.series[0].status.ok()) continue;
      report.system.push_back(SystemStatOf(m));
      if (SystemChartWanted(m.metric) && report.system_charts.size() < 6) {
        Chart chart;
        chart.metric = m.metric;
        chart.axis = XAxis::kRelativeTime;
        chart.grid = m.grid;
        chart.series.push_back({request.run, std::move(m.series[0].buckets)});
        report.system_charts.push_back(std::move(chart));
      }
    }
  }
  return report;
}

}  // namespace trainwatch::report
