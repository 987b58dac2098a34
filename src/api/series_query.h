// The parameters of GET /api/v1/series and /api/v1/series/batch, parsed from a request's query into
// the query layer's requests (query/series_request.h).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/http_server.h"
#include "query/series_request.h"

namespace trainwatch::api {

constexpr uint32_t kMaxBuckets = 100'000;
// Runs in one series query; runs times metrics in one batch.
constexpr size_t kMaxSeriesPerQuery = 1'000;
// The highest rank a query may name (ranks are below 2^31 on the way in).
constexpr int64_t kMaxRank = (int64_t{1} << 31) - 1;

// Parses the optional `rank` parameter into *rank (left unset when absent); a 400 naming it when
// it is not an integer from 0 to kMaxRank.
std::optional<HttpResponse> ParseRankParam(const HttpRequest& req, std::optional<uint32_t>* rank);

struct SeriesQuery {
  std::string project;
  std::vector<std::string> runs;
  std::vector<std::string> metrics;  // one for /api/v1/series
  std::string x_text;                // as given: echoed in the answer
  query::XAxis axis = query::XAxis::kStep;
  double from = -INFINITY, to = INFINITY;
  int64_t buckets = 0;  // 0: raw points
  size_t limit = 0;     // raw points in the whole answer (ApiContext::max_raw_points, or fewer)
  std::optional<uint32_t> rank;  // a distributed run's rank; none: the run-level series (rank 0)

  query::SeriesSelection Selection() const {
    return {project, runs, axis, from, to, rank.value_or(0)};
  }
  // The raw read of metrics.front() (a parsed single-series query).
  query::RawRequest Raw() const { return {Selection(), metrics.front(), limit}; }
  // The downsampling of every metric (buckets > 0).
  query::DownsampleRequest Downsampled() const {
    return {Selection(), metrics, static_cast<uint32_t>(buckets)};
  }
};

// Reads project (default "default"), run (one or more), x (step, time or relative; default step),
// from, to (finite numbers), buckets (1..kMaxBuckets), limit (1..max_raw_points; default
// max_raw_points) and rank (0..kMaxRank); a 400 that names the parameter when one is missing or
// malformed.
std::optional<HttpResponse> ParseSeriesQuery(const HttpRequest& req, size_t max_raw_points,
                                             SeriesQuery* q);

// /api/v1/series: the above and `metric` (required; the first one given).
std::optional<HttpResponse> ParseSingleSeriesQuery(const HttpRequest& req, size_t max_raw_points,
                                                   SeriesQuery* q);

// /api/v1/series/batch: the above with `metric` one or more times and `buckets` required, and at
// most kMaxSeriesPerQuery runs × metrics.
std::optional<HttpResponse> ParseSeriesBatchQuery(const HttpRequest& req, size_t max_raw_points,
                                                  SeriesQuery* q);

}  // namespace trainwatch::api
