// RunSearch: filters, sorts and pages runs for GET /api/v1/runs.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/engine.h"

namespace re2 {
class RE2;
}

namespace trainwatch::api {

struct RunQuery {
  std::string project;       // empty: every project
  std::string name_regex;    // RE2, unanchored, matched against the display name
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

// InvalidArgument for a bad regex (with RE2's reason) or an unknown sort key.
Result<RunPage> SearchRuns(const storage::Engine& engine, const RunQuery& query);

}  // namespace trainwatch::api
