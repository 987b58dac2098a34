// Run search: which runs match a filter, in what order, and which page of them to answer
// (GET /api/v1/runs). The filter, sort and page rules, and the search over one Engine's runs.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "storage/encoding/point.h"
#include "storage/run_info.h"

namespace trainwatch::storage {
class Engine;
}

namespace trainwatch::query {

struct RunSearch {
  std::string project;            // empty: every project
  std::string name_regex;         // RE2, unanchored, matched against the display name
  std::vector<std::string> tags;  // every one must be present
  std::string status;
  std::string group;
  // "lr" -> "0.001": the config value at the dotted path must equal the text (numbers compare as
  // numbers, strings as strings, anything else by its JSON text).
  std::map<std::string, std::string> config;
  // name | start_time | last_write_time | status | metric:<name>; '-' prefix for descending.
  std::string sort = "-start_time";
  size_t offset = 0;
  size_t limit = 100;
  std::vector<std::string> latest;  // metrics whose latest value to include
};

struct RunRow {
  storage::RunInfo info;
  std::vector<std::pair<std::string, storage::Point>> latest;  // in the order asked
};

struct RunPage {
  size_t total = 0;  // matches before paging
  std::vector<RunRow> rows;
};

// RunSearch::sort, parsed.
struct RunOrder {
  std::string key;     // name | start_time | last_write_time | status; empty with a metric
  std::string metric;  // metric:<name>: by its latest value, runs without it last
  bool descending = false;
};

// InvalidArgument naming the key unless it is one of RunSearch::sort's.
Result<RunOrder> ParseRunOrder(const std::string& sort);

// Sorts rows by `order`, stably. With order.metric, each row's latest.front() must hold that
// metric's latest value (or latest be empty: the run lacks it).
void SortRuns(const RunOrder& order, std::vector<RunRow>* rows);

// The runs of `engine` that match, sorted and paged, each with the latest values asked for.
// InvalidArgument for a bad regex (with RE2's reason) or an unknown sort key.
Result<RunPage> SearchRuns(const storage::Engine& engine, const RunSearch& search);

}  // namespace trainwatch::query
