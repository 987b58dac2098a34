// The query parameters of GET /api/v1/runs, parsed into a query::RunSearch.
#pragma once

#include <cstddef>
#include <optional>

#include "api/http_server.h"
#include "query/run_search.h"

namespace trainwatch::api {

// The most runs one page holds (a larger `limit` is cut to it).
constexpr size_t kMaxRunsPerPage = 10'000;

// Reads project, q (the name regex), tag (repeated), status, group, config.<path>=<value>, sort,
// latest (comma-separated metric names), limit and offset (non-negative integers). A 400 that names
// the parameter when limit or offset is malformed; the regex and the sort key are checked by the
// search itself.
std::optional<HttpResponse> ParseRunSearch(const HttpRequest& req, query::RunSearch* search);

}  // namespace trainwatch::api
