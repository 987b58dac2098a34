// GET /api/v1/series (raw or downsampled), /api/v1/series/batch and /api/v1/series/superseded:
// parameters into query requests (series_query.h), the Querier's answers out as JSON.
#include "api/json_writer.h"
#include "api/query_common.h"
#include "api/routes.h"
#include "api/series_query.h"

namespace trainwatch::api {
namespace {

void AppendGrid(std::string* body, const query::BucketGrid& grid) {
  *body += "{\"from\":";
  AppendNumber(body, grid.from, NonFinite::kStrings);
  *body += ",\"to\":";
  AppendNumber(body, grid.to, NonFinite::kStrings);
  *body += ",\"buckets\":" + std::to_string(grid.count) + ",\"width\":";
  AppendNumber(body, grid.Width(), NonFinite::kStrings);
  body->push_back('}');
}

// `,"series":[...]}` of raw points. A series cut short says where the rest starts: "next_from" (a
// step; x=step) for the next request's `from`, or "truncated" (x=time, relative: ask for buckets or
// a narrower range).
void AppendRawSeries(const std::vector<query::RawSeries>& series, std::string* body) {
  *body += ",\"series\":[";
  for (size_t i = 0; i < series.size(); ++i) {
    const query::RawSeries& s = series[i];
    if (i) body->push_back(',');
    *body += "{\"run\":";
    AppendString(body, s.run);
    if (!s.status.ok()) {
      *body += ",\"error\":";
      AppendString(body, s.status.message());
      *body += ",\"points\":[]}";
      continue;
    }
    *body += ",\"points\":[";
    for (size_t k = 0; k < s.points.size(); ++k) {
      if (k) body->push_back(',');
      AppendPoint(body, s.points[k]);
    }
    *body += "]";
    if (s.next_from) {
      *body += ",\"next_from\":";
      AppendInt(body, *s.next_from);
    } else if (s.truncated) {
      *body += ",\"truncated\":true";
    }
    body->push_back('}');
  }
  *body += "]}\n";
}

// A bucket's min or max: null for a bucket of NaNs only.
void AppendRangeEnd(std::string* body, const query::Bucket& b, double v) {
  if (b.count > b.nan_count)
    AppendNumber(body, v, NonFinite::kStrings);
  else
    *body += "null";
}

void AppendBucketObjects(const std::vector<query::Bucket>& buckets, std::string* body) {
  *body += ",\"buckets\":[";
  for (size_t k = 0; k < buckets.size(); ++k) {
    const query::Bucket& b = buckets[k];
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
void AppendBucketColumns(const std::vector<query::Bucket>& buckets, std::string* body) {
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
  using B = query::Bucket;
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

// `"grid":{...},"series":[...]` of one metric, downsampled; each run's buckets as objects or
// columns.
void AppendDownsampled(const query::DownsampledMetric& metric, bool columns, std::string* body) {
  *body += ",\"grid\":";
  AppendGrid(body, metric.grid);
  *body += ",\"series\":[";
  for (size_t i = 0; i < metric.series.size(); ++i) {
    const query::DownsampledSeries& s = metric.series[i];
    if (i) body->push_back(',');
    *body += "{\"run\":";
    AppendString(body, s.run);
    if (!s.status.ok()) {
      *body += ",\"error\":";
      AppendString(body, s.status.message());
    }
    if (columns)
      AppendBucketColumns(s.buckets, body);
    else
      AppendBucketObjects(s.buckets, body);
    body->push_back('}');
  }
  body->push_back(']');
}

// GET /api/v1/series?project=P&run=R1&run=R2&metric=M[&x=step|time|relative][&from=&to=]
// [&buckets=N][&rank=N]
void HandleSeries(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  SeriesQuery q;
  if (auto error = ParseSingleSeriesQuery(req, ctx.max_raw_points, &q))
    return respond(std::move(*error));
  std::string body = "{\"metric\":";
  AppendString(&body, q.metrics.front());
  body += ",\"x\":\"" + q.x_text + "\"";
  if (q.rank) body += ",\"rank\":" + std::to_string(*q.rank);
  if (q.buckets == 0) {
    AppendRawSeries(ctx.querier.ReadRaw(q.Raw()), &body);
    return respond(HttpResponse::Json(200, std::move(body)));
  }
  Result<std::vector<query::DownsampledMetric>> answer = ctx.querier.Downsample(q.Downsampled());
  if (!answer.ok())
    return respond(HttpResponse::Error(HttpStatusOf(answer.status()), answer.status().message()));
  AppendDownsampled(answer->front(), /*columns=*/false, &body);
  body += "}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

// GET /api/v1/series/batch?project=P&run=R1&run=R2&metric=M1&metric=M2&buckets=N[&x=][&from=&to=]:
// what /api/v1/series?buckets=N answers for each metric (its own grid), in one response, each
// bucket field a column: a page of charts in a few requests instead of one per chart.
void HandleSeriesBatch(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  SeriesQuery q;
  if (auto error = ParseSeriesBatchQuery(req, ctx.max_raw_points, &q))
    return respond(std::move(*error));
  Result<std::vector<query::DownsampledMetric>> answer = ctx.querier.Downsample(q.Downsampled());
  if (!answer.ok())
    return respond(HttpResponse::Error(HttpStatusOf(answer.status()), answer.status().message()));
  std::string body = "{\"x\":\"" + q.x_text + "\",\"metrics\":[";
  for (size_t m = 0; m < answer->size(); ++m) {
    if (m) body.push_back(',');
    body += "{\"metric\":";
    AppendString(&body, (*answer)[m].metric);
    AppendDownsampled((*answer)[m], /*columns=*/true, &body);
    body.push_back('}');
  }
  body += "]}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

void HandleSuperseded(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  storage::RunInfo info;
  if (!RequireRun(ctx, req, respond, &info)) return;
  std::string metric = req.Param("metric");
  if (metric.empty())
    return respond(HttpResponse::Error(400, "query parameter 'metric' is required"));
  std::optional<uint32_t> rank;
  if (auto error = ParseRankParam(req, &rank)) return respond(std::move(*error));
  auto points = ctx.querier.ReadSuperseded({info.project, info.id, metric, rank.value_or(0)});
  if (!points.ok())
    return respond(HttpResponse::Error(HttpStatusOf(points.status()), points.status().message()));
  std::string body = "{\"metric\":";
  AppendString(&body, metric);
  body += ",\"points\":[";
  for (size_t i = 0; i < points->size(); ++i) {
    if (i) body.push_back(',');
    body += "{\"timeline\":" + std::to_string((*points)[i].gen) + ",\"point\":";
    AppendPoint(&body, (*points)[i].point);
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
