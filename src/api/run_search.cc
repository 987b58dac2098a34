#include "api/run_search.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <re2/re2.h>

namespace trainwatch::api {
namespace {

// The config value at a dotted path, or nullptr.
const nlohmann::json* ConfigAt(const nlohmann::json& config, const std::string& path) {
  const nlohmann::json* node = &config;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return node;
}

bool ConfigMatches(const nlohmann::json& config, const std::string& path, const std::string& text) {
  const nlohmann::json* v = ConfigAt(config, path);
  if (v == nullptr) return false;
  if (v->is_number()) {
    double want;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), want);
    return ec == std::errc() && ptr == text.data() + text.size() && v->get<double>() == want;
  }
  if (v->is_string()) return v->get<std::string>() == text;
  return v->dump() == text;
}

}  // namespace

Result<RunPage> SearchRuns(const storage::Engine& engine, const RunQuery& query) {
  std::unique_ptr<re2::RE2> regex;
  if (!query.name_regex.empty()) {
    re2::RE2::Options options;
    options.set_log_errors(false);
    options.set_max_mem(8 << 20);
    regex = std::make_unique<re2::RE2>(query.name_regex, options);
    if (!regex->ok()) {
      return Status::InvalidArgument("invalid regular expression '" + query.name_regex +
                                     "': " + regex->error());
    }
  }
  bool descending = query.sort.starts_with("-");
  std::string key = descending ? query.sort.substr(1) : query.sort;
  std::string sort_metric;
  if (key.starts_with("metric:")) {
    sort_metric = key.substr(7);
  } else if (key != "name" && key != "start_time" && key != "last_write_time" && key != "status") {
    return Status::InvalidArgument("unknown sort key '" + key +
                                   "' (name, start_time, last_write_time, status, metric:<name>)");
  }

  std::vector<RunRow> rows;
  for (storage::RunInfo& info : engine.ListRuns()) {
    if (!query.project.empty() && info.project != query.project) continue;
    if (!query.status.empty() && storage::RunStatusName(info.status) != query.status) continue;
    if (!query.group.empty() && info.group != query.group) continue;
    if (regex && !re2::RE2::PartialMatch(info.name, *regex)) continue;
    bool ok = true;
    for (const std::string& tag : query.tags) ok = ok && info.tags.count(tag);
    for (const auto& [path, text] : query.config) ok = ok && ConfigMatches(info.config, path, text);
    if (!ok) continue;
    rows.push_back(RunRow{std::move(info), {}});
  }

  auto metric_of = [&](const RunRow& row) {
    if (row.latest.empty() || std::isnan(row.latest.front().second.value)) return std::optional<double>();
    return std::optional(row.latest.front().second.value);
  };
  if (!sort_metric.empty()) {
    std::vector<storage::RunKey> keys;
    for (const RunRow& row : rows) keys.push_back({row.info.project, row.info.id});
    auto latest = engine.LatestValues(keys, {sort_metric});
    for (size_t i = 0; i < rows.size(); ++i) rows[i].latest = std::move(latest[i]);
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const RunRow& a, const RunRow& b) {
    if (!sort_metric.empty()) {
      auto x = metric_of(a), y = metric_of(b);
      if (!x || !y) return x.has_value() && !y.has_value();  // runs without the metric go last
      return descending ? *x > *y : *x < *y;
    }
    auto cmp = [&](const auto& x, const auto& y) { return descending ? x > y : x < y; };
    if (key == "name") return a.info.name != b.info.name ? cmp(a.info.name, b.info.name) : a.info.id < b.info.id;
    if (key == "status") return cmp(storage::RunStatusName(a.info.status), storage::RunStatusName(b.info.status));
    if (key == "last_write_time") return cmp(a.info.last_write_time, b.info.last_write_time);
    return cmp(a.info.start_time, b.info.start_time);
  });

  RunPage page;
  page.total = rows.size();
  size_t begin = std::min(query.offset, rows.size());
  size_t end = std::min(rows.size(), begin + query.limit);
  std::vector<storage::RunKey> keys;
  for (size_t i = begin; i < end; ++i) keys.push_back({rows[i].info.project, rows[i].info.id});
  std::vector<std::vector<std::pair<std::string, storage::Point>>> latest;
  if (!query.latest.empty()) latest = engine.LatestValues(keys, query.latest);
  for (size_t i = begin; i < end; ++i) {
    RunRow& row = rows[i];
    row.latest = query.latest.empty() ? decltype(row.latest){} : std::move(latest[i - begin]);
    page.rows.push_back(std::move(row));
  }
  return page;
}

}  // namespace trainwatch::api
