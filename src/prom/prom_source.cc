#include "prom/prom_source.h"

#include <re2/re2.h>

#include <algorithm>
#include <cmath>

#include "influx/influx_catalog.h"

namespace trainwatch::prom {
namespace {

bool ValidLabelName(const std::string& name) {
  if (name.empty() || name.starts_with("__")) return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

Status QuerierSource::LoadCatalog() {
  if (catalog_) return Status::Ok();
  query::RunSearch all;
  all.sort = "name";
  all.limit = size_t{1} << 30;
  Result<query::RunPage> page = querier_.SearchRuns(all);
  if (!page.ok()) return page.status();
  std::vector<Entry> entries;
  for (const query::RunRow& row : page->rows) {
    const storage::RunInfo& run = row.info;
    if (!projects_.empty() &&
        std::find(projects_.begin(), projects_.end(), run.project) == projects_.end()) {
      continue;
    }
    Labels run_labels;
    for (const std::string& tag : run.tags) {
      const size_t eq = tag.find('=');
      if (eq != std::string::npos && ValidLabelName(tag.substr(0, eq)))
        run_labels[tag.substr(0, eq)] = tag.substr(eq + 1);
    }
    for (const storage::MetricInfo& m : querier_.ListMetrics({run.project, run.id})) {
      if (m.kind != "scalar") continue;
      std::string base;
      std::map<std::string, std::string> tags;
      influx::SplitMetric(m.name, &base, &tags);
      Labels labels = run_labels;
      for (const auto& [k, v] : tags) {
        if (ValidLabelName(k)) labels[k] = v;
      }
      labels["__name__"] = kMetricName;
      labels["project"] = run.project;
      labels["run"] = run.id;
      labels["metric_name"] = base;
      if (!run.host.empty()) labels["host"] = run.host;
      entries.push_back({std::move(labels), run.project, run.id, m.name});
    }
  }
  catalog_ = std::move(entries);
  return Status::Ok();
}

// Prometheus's matching: a missing label is "", regexes are anchored at both ends.
Result<bool> QuerierSource::Matches(const Labels& labels,
                                    const std::vector<LabelMatcher>& matchers) {
  for (const LabelMatcher& m : matchers) {
    auto it = labels.find(m.name);
    const std::string value = it == labels.end() ? "" : it->second;
    bool ok = true;
    switch (m.op) {
      case LabelMatcher::Op::kEqual:
        ok = value == m.value;
        break;
      case LabelMatcher::Op::kNotEqual:
        ok = value != m.value;
        break;
      case LabelMatcher::Op::kRegex:
      case LabelMatcher::Op::kNotRegex: {
        RE2 re("^(?:" + m.value + ")$", RE2::Quiet);
        if (!re.ok())
          return Status::InvalidArgument("invalid regular expression \"" + m.value +
                                         "\": " + re.error());
        ok = RE2::FullMatch(value, re) == (m.op == LabelMatcher::Op::kRegex);
        break;
      }
    }
    if (!ok) return false;
  }
  return true;
}

Result<std::vector<Labels>> QuerierSource::Labelled(const std::vector<LabelMatcher>& matchers) {
  TW_RETURN_IF_ERROR(LoadCatalog());
  std::vector<Labels> out;
  for (const Entry& e : *catalog_) {
    Result<bool> m = Matches(e.labels, matchers);
    if (!m.ok()) return m.status();
    if (*m) out.push_back(e.labels);
  }
  return out;
}

Result<std::vector<SeriesPoints>> QuerierSource::Select(const std::vector<LabelMatcher>& matchers,
                                                        int64_t from_ms, int64_t to_ms) {
  TW_RETURN_IF_ERROR(LoadCatalog());
  std::vector<SeriesPoints> out;
  for (const Entry& e : *catalog_) {
    Result<bool> m = Matches(e.labels, matchers);
    if (!m.ok()) return m.status();
    if (!*m) continue;
    query::RawRequest request;
    request.selection.project = e.project;
    request.selection.runs = {e.run};
    request.selection.axis = query::XAxis::kWallTime;
    request.selection.from = static_cast<double>(from_ms) / 1000 - 0.001;
    request.selection.to = static_cast<double>(to_ms) / 1000 + 0.001;
    request.metric = e.metric;
    request.limit = 50'000'000;
    SeriesPoints series{e.labels, {}};
    for (const query::RawSeries& raw : querier_.ReadRaw(request)) {
      for (const storage::Point& p : raw.points) {
        const int64_t t = std::llround(p.time * 1000);
        if (t >= from_ms && t <= to_ms) series.points.emplace_back(t, p.value);
      }
    }
    std::stable_sort(series.points.begin(), series.points.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    if (!series.points.empty()) out.push_back(std::move(series));
  }
  return out;
}

}  // namespace trainwatch::prom
