// GET /api/v1/series (raw or downsampled), /api/v1/series/batch and /api/v1/series/superseded.
#include <algorithm>
#include <cmath>
#include <limits>

#include "api/json_writer.h"
#include "api/query_common.h"
#include "api/routes.h"
#include "api/series_query.h"

namespace trainwatch::api {
namespace {

// A step bound from a double: saturates at the int64 range (doubles beyond it, and ±Inf).
int64_t ClampToStep(double x) {
  if (!(x < 0x1p63)) return std::numeric_limits<int64_t>::max();
  if (x < -0x1p63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

// One grid for all runs of a metric: the requested range, else the union of their ranges. False
// when `to` is below `from`.
bool GridOf(ApiContext& ctx, const SeriesQuery& q, const std::string& metric, storage::BucketGrid* grid) {
  grid->count = static_cast<uint32_t>(q.buckets);
  double lo = INFINITY, hi = -INFINITY;
  for (const std::string& run : q.runs) {
    double a, b;
    if (ctx.engine.XRange({q.project, run, metric}, q.axis, &a, &b).ok()) {
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
  }
  grid->from = std::isfinite(q.from) ? q.from : (std::isfinite(lo) ? lo : 0);
  grid->to = std::isfinite(q.to) ? q.to : (std::isfinite(hi) ? std::max(hi, grid->from) : grid->from);
  return grid->to >= grid->from;
}

void AppendGrid(std::string* body, const storage::BucketGrid& grid) {
  *body += "{\"from\":";
  AppendNumber(body, grid.from, NonFinite::kStrings);
  *body += ",\"to\":";
  AppendNumber(body, grid.to, NonFinite::kStrings);
  *body += ",\"buckets\":" + std::to_string(grid.count) + ",\"width\":";
  AppendNumber(body, grid.Width(), NonFinite::kStrings);
  body->push_back('}');
}

// The runs' raw points, q.limit in all at most (whatever the range holds: the answer's memory is
// bounded). A series cut short says where the rest starts: "next_from" (a step; x=step) for the
// next request's `from`, or "truncated" (x=time, relative: ask for buckets or a narrower range).
void AppendRawSeries(ApiContext& ctx, const SeriesQuery& q, const std::string& metric, std::string* body) {
  *body += ",\"series\":[";
  size_t budget = q.limit;
  for (size_t i = 0; i < q.runs.size(); ++i) {
    std::vector<storage::Point> points;
    storage::SeriesReadOptions options;
    if (q.axis == storage::XAxis::kStep) {
      options.from_step = ClampToStep(std::ceil(q.from));
      options.to_step = ClampToStep(std::floor(q.to));
      if (q.from > 0x1p63 || q.to < -0x1p63) options.to_step = options.from_step - 1;  // empty range
    }
    // With the budget spent, one point is read to say where this series would start.
    options.max_points = std::max<size_t>(budget, 1);
    std::optional<int64_t> next;
    Status s = ctx.engine.ReadSeries({q.project, q.runs[i], metric}, options, &points, &next);
    if (s.ok() && budget == 0 && !points.empty()) {
      next = points.front().step;
      points.clear();
    }
    budget -= std::min(budget, points.size());
    if (i) body->push_back(',');
    *body += "{\"run\":";
    AppendString(body, q.runs[i]);
    if (!s.ok()) {
      *body += ",\"error\":";
      AppendString(body, s.message());
      *body += ",\"points\":[]}";
      continue;
    }
    double origin = 0;
    if (q.axis == storage::XAxis::kRelativeTime) {
      if (auto run = ctx.engine.GetRun(q.project, q.runs[i])) origin = run->start_time;
    }
    *body += ",\"points\":[";
    bool first = true;
    for (const storage::Point& p : points) {
      if (q.axis != storage::XAxis::kStep) {
        double x = p.time - origin;
        if (x < q.from || x > q.to) continue;
      }
      if (!first) body->push_back(',');
      first = false;
      AppendPoint(body, p);
    }
    *body += "]";
    if (next && q.axis == storage::XAxis::kStep) {
      *body += ",\"next_from\":";
      AppendInt(body, *next);
    } else if (next) {
      *body += ",\"truncated\":true";
    }
    body->push_back('}');
  }
  *body += "]}\n";
}

// A bucket's min or max: null for a bucket of NaNs only.
void AppendRangeEnd(std::string* body, const storage::Bucket& b, double v) {
  if (b.count > b.nan_count) AppendNumber(body, v, NonFinite::kStrings); else *body += "null";
}

void AppendBucketObjects(const std::vector<storage::Bucket>& buckets, std::string* body) {
  *body += ",\"buckets\":[";
  for (size_t k = 0; k < buckets.size(); ++k) {
    const storage::Bucket& b = buckets[k];
    if (k) body->push_back(',');
    *body += "{\"i\":" + std::to_string(b.index) + ",\"count\":" + std::to_string(b.count) +
             ",\"nan_count\":" + std::to_string(b.nan_count) + ",\"min\":";
    AppendRangeEnd(body, b, b.min);
    *body += ",\"max\":";
    AppendRangeEnd(body, b, b.max);
    *body += ",\"first\":";
    AppendNumber(body, b.first, NonFinite::kStrings);
    *body += ",\"last\":";
    AppendNumber(body, b.last, NonFinite::kStrings);
    *body += ",\"first_step\":";
    AppendInt(body, b.first_step);
    *body += ",\"last_step\":";
    AppendInt(body, b.last_step);
    *body += ",\"sum\":";
    AppendNumber(body, b.sum, NonFinite::kStrings);
    body->push_back('}');
  }
  body->push_back(']');
}

// The same fields, one array per field: a third of the bytes, and far quicker for a browser to
// parse than as many small objects.
void AppendBucketColumns(const std::vector<storage::Bucket>& buckets, std::string* body) {
  auto column = [&](const char* name, auto append) {
    *body += ",\"";
    *body += name;
    *body += "\":[";
    for (size_t k = 0; k < buckets.size(); ++k) {
      if (k) body->push_back(',');
      append(buckets[k]);
    }
    body->push_back(']');
  };
  using B = storage::Bucket;
  column("i", [&](const B& b) { AppendInt(body, b.index); });
  column("count", [&](const B& b) { AppendInt(body, static_cast<int64_t>(b.count)); });
  column("nan_count", [&](const B& b) { AppendInt(body, static_cast<int64_t>(b.nan_count)); });
  column("min", [&](const B& b) { AppendRangeEnd(body, b, b.min); });
  column("max", [&](const B& b) { AppendRangeEnd(body, b, b.max); });
  column("first", [&](const B& b) { AppendNumber(body, b.first, NonFinite::kStrings); });
  column("last", [&](const B& b) { AppendNumber(body, b.last, NonFinite::kStrings); });
  column("first_step", [&](const B& b) { AppendInt(body, b.first_step); });
  column("last_step", [&](const B& b) { AppendInt(body, b.last_step); });
  column("sum", [&](const B& b) { AppendNumber(body, b.sum, NonFinite::kStrings); });
}

// `"grid":{...},"series":[...]` of one metric, downsampled; each run's buckets as objects or columns.
void AppendDownsampled(ApiContext& ctx, const SeriesQuery& q, const std::string& metric,
                       const storage::BucketGrid& grid, bool columns, std::string* body) {
  *body += ",\"grid\":";
  AppendGrid(body, grid);
  *body += ",\"series\":[";
  for (size_t i = 0; i < q.runs.size(); ++i) {
    std::vector<storage::Bucket> out;
    Status s = ctx.engine.Downsample({q.project, q.runs[i], metric}, q.axis, grid, &out);
    if (i) body->push_back(',');
    *body += "{\"run\":";
    AppendString(body, q.runs[i]);
    if (!s.ok()) {
      *body += ",\"error\":";
      AppendString(body, s.message());
    }
    if (columns) AppendBucketColumns(out, body); else AppendBucketObjects(out, body);
    body->push_back('}');
  }
  body->push_back(']');
}

// GET /api/v1/series?project=P&run=R1&run=R2&metric=M[&x=step|time|relative][&from=&to=][&buckets=N]
void HandleSeries(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  SeriesQuery q;
  if (auto error = ParseSeriesQuery(req, ctx.max_raw_points, &q)) return respond(std::move(*error));
  std::string metric = req.Param("metric");
  if (metric.empty()) return respond(HttpResponse::Error(400, "query parameter 'metric' is required"));
  std::string body = "{\"metric\":";
  AppendString(&body, metric);
  body += ",\"x\":\"" + q.x_text + "\"";
  if (q.buckets == 0) {
    AppendRawSeries(ctx, q, metric, &body);
    return respond(HttpResponse::Json(200, std::move(body)));
  }
  storage::BucketGrid grid;
  if (!GridOf(ctx, q, metric, &grid)) return respond(HttpResponse::Error(400, "to is below from"));
  AppendDownsampled(ctx, q, metric, grid, /*columns=*/false, &body);
  body += "}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

// GET /api/v1/series/batch?project=P&run=R1&run=R2&metric=M1&metric=M2&buckets=N[&x=][&from=&to=]:
// what /api/v1/series?buckets=N answers for each metric (its own grid), in one response, each
// bucket field a column: a page of charts in a few requests instead of one per chart.
void HandleSeriesBatch(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  SeriesQuery q;
  if (auto error = ParseSeriesQuery(req, ctx.max_raw_points, &q)) return respond(std::move(*error));
  std::vector<std::string> metrics = req.Params("metric");
  if (metrics.empty()) return respond(HttpResponse::Error(400, "query parameter 'metric' (one or more) is required"));
  if (q.buckets == 0) return respond(HttpResponse::Error(400, "query parameter 'buckets' is required"));
  if (metrics.size() * q.runs.size() > kMaxSeriesPerQuery) {
    return respond(HttpResponse::Error(400, "more than " + std::to_string(kMaxSeriesPerQuery) +
                                                " series (runs × metrics) in one query"));
  }
  std::string body = "{\"x\":\"" + q.x_text + "\",\"metrics\":[";
  for (size_t m = 0; m < metrics.size(); ++m) {
    storage::BucketGrid grid;
    if (!GridOf(ctx, q, metrics[m], &grid)) return respond(HttpResponse::Error(400, "to is below from"));
    if (m) body.push_back(',');
    body += "{\"metric\":";
    AppendString(&body, metrics[m]);
    AppendDownsampled(ctx, q, metrics[m], grid, /*columns=*/true, &body);
    body.push_back('}');
  }
  body += "]}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

void HandleSuperseded(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  storage::RunInfo info;
  if (!RequireRun(ctx, req, respond, &info)) return;
  std::string metric = req.Param("metric");
  if (metric.empty()) return respond(HttpResponse::Error(400, "query parameter 'metric' is required"));
  std::vector<storage::SupersededPoint> points;
  Status s = ctx.engine.ReadSuperseded({info.project, info.id, metric}, &points);
  if (!s.ok()) return respond(HttpResponse::Error(HttpStatusOf(s), s.message()));
  std::string body = "{\"metric\":";
  AppendString(&body, metric);
  body += ",\"points\":[";
  for (size_t i = 0; i < points.size(); ++i) {
    if (i) body.push_back(',');
    body += "{\"timeline\":" + std::to_string(points[i].gen) + ",\"point\":";
    AppendPoint(&body, points[i].point);
    body.push_back('}');
  }
  body += "]}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

}  // namespace

void RegisterSeriesRoutes(HttpServer& server, ApiContext& ctx) {
  RouteStoreRead(server, ctx, "/api/v1/series", HandleSeries);
  RouteStoreRead(server, ctx, "/api/v1/series/batch", HandleSeriesBatch);
  RouteStoreRead(server, ctx, "/api/v1/series/superseded", HandleSuperseded);
}

}  // namespace trainwatch::api
