#include "query/run_search.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <optional>

#include <re2/re2.h>

#include "storage/engine.h"

namespace trainwatch::query {
namespace {

// The config value at a dotted path, or nullptr.
const nlohmann::json* ConfigAt(const nlohmann::json& config, const std::string& path) {
  const nlohmann::json* node = &config;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string key =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
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

// The compiled name filter (null without one), or InvalidArgument with RE2's reason.
Result<std::unique_ptr<re2::RE2>> CompileNameFilter(const std::string& pattern) {
  if (pattern.empty()) return std::unique_ptr<re2::RE2>();
  re2::RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(8 << 20);
  auto regex = std::make_unique<re2::RE2>(pattern, options);
  if (!regex->ok()) {
    return Status::InvalidArgument("invalid regular expression '" + pattern +
                                   "': " + regex->error());
  }
  return regex;
}

bool Matches(const RunSearch& search, const re2::RE2* name, const storage::RunInfo& info) {
  if (!search.project.empty() && info.project != search.project) return false;
  if (!search.status.empty() && storage::RunStatusName(info.status) != search.status) return false;
  if (!search.group.empty() && info.group != search.group) return false;
  if (name != nullptr && !re2::RE2::PartialMatch(info.name, *name)) return false;
  for (const std::string& tag : search.tags) {
    if (!info.tags.count(tag)) return false;
  }
  for (const auto& [path, text] : search.config) {
    if (!ConfigMatches(info.config, path, text)) return false;
  }
  return true;
}

std::vector<storage::RunKey> KeysOf(const std::vector<RunRow>& rows, size_t begin, size_t end) {
  std::vector<storage::RunKey> keys;
  keys.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) keys.push_back({rows[i].info.project, rows[i].info.id});
  return keys;
}

}  // namespace

Result<RunOrder> ParseRunOrder(const std::string& sort) {
  RunOrder order;
  order.descending = sort.starts_with("-");
  std::string key = order.descending ? sort.substr(1) : sort;
  if (key.starts_with("metric:")) {
    order.metric = key.substr(7);
  } else if (key == "name" || key == "start_time" || key == "last_write_time" || key == "status") {
    order.key = key;
  } else {
    return Status::InvalidArgument("unknown sort key '" + key +
                                   "' (name, start_time, last_write_time, status, metric:<name>)");
  }
  return order;
}

void SortRuns(const RunOrder& order, std::vector<RunRow>* rows) {
  auto metric_of = [](const RunRow& row) {
    if (row.latest.empty() || std::isnan(row.latest.front().second.value))
      return std::optional<double>();
    return std::optional(row.latest.front().second.value);
  };
  const bool descending = order.descending;
  std::stable_sort(rows->begin(), rows->end(), [&](const RunRow& a, const RunRow& b) {
    if (!order.metric.empty()) {
      auto x = metric_of(a), y = metric_of(b);
      if (!x || !y) return x.has_value() && !y.has_value();  // runs without the metric go last
      return descending ? *x > *y : *x < *y;
    }
    auto cmp = [&](const auto& x, const auto& y) { return descending ? x > y : x < y; };
    if (order.key == "name")
      return a.info.name != b.info.name ? cmp(a.info.name, b.info.name) : a.info.id < b.info.id;
    if (order.key == "status")
      return cmp(storage::RunStatusName(a.info.status), storage::RunStatusName(b.info.status));
    if (order.key == "last_write_time") return cmp(a.info.last_write_time, b.info.last_write_time);
    return cmp(a.info.start_time, b.info.start_time);
  });
}

Result<RunPage> SearchRuns(const storage::Engine& engine, const RunSearch& search) {
  TW_ASSIGN_OR_RETURN(std::unique_ptr<re2::RE2> name, CompileNameFilter(search.name_regex));
  TW_ASSIGN_OR_RETURN(RunOrder order, ParseRunOrder(search.sort));

  std::vector<RunRow> rows;
  for (storage::RunInfo& info : engine.ListRuns()) {
    if (Matches(search, name.get(), info)) rows.push_back(RunRow{std::move(info), {}});
  }
  if (!order.metric.empty()) {
    auto latest = engine.LatestValues(KeysOf(rows, 0, rows.size()), {order.metric});
    for (size_t i = 0; i < rows.size(); ++i) rows[i].latest = std::move(latest[i]);
  }
  SortRuns(order, &rows);

  RunPage page;
  page.total = rows.size();
  size_t begin = std::min(search.offset, rows.size());
  size_t end = std::min(rows.size(), begin + search.limit);
  std::vector<std::vector<std::pair<std::string, storage::Point>>> latest;
  if (!search.latest.empty()) latest = engine.LatestValues(KeysOf(rows, begin, end), search.latest);
  for (size_t i = begin; i < end; ++i) {
    RunRow& row = rows[i];
    row.latest = search.latest.empty() ? decltype(row.latest){} : std::move(latest[i - begin]);
    page.rows.push_back(std::move(row));
  }
  return page;
}

}  // namespace trainwatch::query
