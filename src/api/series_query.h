// The parameters GET /api/v1/series and /api/v1/series/batch share, parsed from a request's query.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/http_server.h"
#include "storage/downsample.h"

namespace trainwatch::api {

constexpr uint32_t kMaxBuckets = 100'000;
// Runs in one series query; runs times metrics in one batch.
constexpr size_t kMaxSeriesPerQuery = 1'000;

struct SeriesQuery {
  std::string project;
  std::vector<std::string> runs;
  std::string x_text;
  storage::XAxis axis = storage::XAxis::kStep;
  double from = -INFINITY, to = INFINITY;
  int64_t buckets = 0;  // 0: raw points
  size_t limit = 0;     // raw points in the whole answer (ApiContext::max_raw_points, or fewer)
};

// Reads project (default "default"), run (one or more), x (step, time or relative; default step),
// from, to (finite numbers), buckets (1..kMaxBuckets) and limit (1..max_raw_points; default
// max_raw_points); a 400 that names the parameter when one is missing or malformed.
std::optional<HttpResponse> ParseSeriesQuery(const HttpRequest& req, size_t max_raw_points, SeriesQuery* q);

}  // namespace trainwatch::api
