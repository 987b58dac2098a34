#include "api/series_query.h"

#include "api/query_params.h"

namespace trainwatch::api {
namespace {

bool ParseAxis(const std::string& text, query::XAxis* axis) {
  if (text == "step" || text.empty())
    *axis = query::XAxis::kStep;
  else if (text == "time")
    *axis = query::XAxis::kWallTime;
  else if (text == "relative")
    *axis = query::XAxis::kRelativeTime;
  else
    return false;
  return true;
}

}  // namespace

std::optional<HttpResponse> ParseRankParam(const HttpRequest& req, std::optional<uint32_t>* rank) {
  std::string v = req.Param("rank");
  if (v.empty()) return std::nullopt;
  int64_t n = 0;
  if (!ParseInt(v, &n) || n < 0 || n > kMaxRank) {
    return HttpResponse::Error(400,
                               "rank must be an integer from 0 to " + std::to_string(kMaxRank));
  }
  *rank = static_cast<uint32_t>(n);
  return std::nullopt;
}

std::optional<HttpResponse> ParseSeriesQuery(const HttpRequest& req, size_t max_raw_points,
                                             SeriesQuery* q) {
  q->project = req.Param("project", "default");
  q->runs = req.Params("run");
  if (q->runs.empty())
    return HttpResponse::Error(400, "query parameter 'run' (one or more) is required");
  if (q->runs.size() > kMaxSeriesPerQuery)
    return HttpResponse::Error(400, "too many runs in one query");
  q->x_text = req.Param("x", "step");
  if (!ParseAxis(q->x_text, &q->axis))
    return HttpResponse::Error(400, "x must be step, time or relative");
  if (std::string v = req.Param("from"); !v.empty() && !ParseDouble(v, &q->from)) {
    return HttpResponse::Error(400, "from must be a finite number");
  }
  if (std::string v = req.Param("to"); !v.empty() && !ParseDouble(v, &q->to)) {
    return HttpResponse::Error(400, "to must be a finite number");
  }
  if (std::string v = req.Param("buckets"); !v.empty()) {
    if (!ParseInt(v, &q->buckets) || q->buckets < 1 || q->buckets > kMaxBuckets) {
      return HttpResponse::Error(
          400, "buckets must be an integer from 1 to " + std::to_string(kMaxBuckets));
    }
  }
  if (auto error = ParseRankParam(req, &q->rank)) return error;
  q->limit = max_raw_points;
  if (std::string v = req.Param("limit"); !v.empty()) {
    int64_t limit = 0;
    if (!ParseInt(v, &limit) || limit < 1 || static_cast<uint64_t>(limit) > max_raw_points) {
      return HttpResponse::Error(400, "limit must be an integer from 1 to " +
                                          std::to_string(max_raw_points) + " (--max-raw-points)");
    }
    q->limit = static_cast<size_t>(limit);
  }
  return std::nullopt;
}

std::optional<HttpResponse> ParseSingleSeriesQuery(const HttpRequest& req, size_t max_raw_points,
                                                   SeriesQuery* q) {
  if (auto error = ParseSeriesQuery(req, max_raw_points, q)) return error;
  std::string metric = req.Param("metric");
  if (metric.empty()) return HttpResponse::Error(400, "query parameter 'metric' is required");
  q->metrics = {std::move(metric)};
  return std::nullopt;
}

std::optional<HttpResponse> ParseSeriesBatchQuery(const HttpRequest& req, size_t max_raw_points,
                                                  SeriesQuery* q) {
  if (auto error = ParseSeriesQuery(req, max_raw_points, q)) return error;
  q->metrics = req.Params("metric");
  if (q->metrics.empty())
    return HttpResponse::Error(400, "query parameter 'metric' (one or more) is required");
  if (q->buckets == 0) return HttpResponse::Error(400, "query parameter 'buckets' is required");
  if (q->metrics.size() * q->runs.size() > kMaxSeriesPerQuery) {
    return HttpResponse::Error(400, "more than " + std::to_string(kMaxSeriesPerQuery) +
                                        " series (runs × metrics) in one query");
  }
  return std::nullopt;
}

}  // namespace trainwatch::api
