// Distributed runs (docs/distributed.md): GET /api/v1/series/ranks (across-rank aggregates),
// /api/v1/series/rank_matrix (rank × bucket) and /api/v1/ranks (the ranks table). Parameters into
// the query layer's requests (query/rank_query.h), its answers out as JSON.
#include "api/json_writer.h"
#include "api/query_common.h"
#include "api/query_params.h"
#include "api/routes.h"
#include "api/series_query.h"

namespace trainwatch::api {
namespace {

// project (default "default"), run and metric (required), buckets (required, 1..kMaxBuckets),
// from and to (finite steps); a 400 naming the parameter.
std::optional<HttpResponse> ParseRankRequest(const HttpRequest& req, query::RankRequest* out) {
  out->metric.project = req.Param("project", "default");
  out->metric.run = req.Param("run");
  if (out->metric.run.empty()) return HttpResponse::Error(400, "query parameter 'run' is required");
  out->metric.metric = req.Param("metric");
  if (out->metric.metric.empty())
    return HttpResponse::Error(400, "query parameter 'metric' is required");
  std::string b = req.Param("buckets");
  if (b.empty()) return HttpResponse::Error(400, "query parameter 'buckets' is required");
  int64_t buckets = 0;
  if (!ParseInt(b, &buckets) || buckets < 1 || buckets > kMaxBuckets) {
    return HttpResponse::Error(
        400, "buckets must be an integer from 1 to " + std::to_string(kMaxBuckets));
  }
  out->buckets = static_cast<uint32_t>(buckets);
  if (std::string v = req.Param("from"); !v.empty() && !ParseDouble(v, &out->from))
    return HttpResponse::Error(400, "from must be a finite number");
  if (std::string v = req.Param("to"); !v.empty() && !ParseDouble(v, &out->to))
    return HttpResponse::Error(400, "to must be a finite number");
  return std::nullopt;
}

void AppendHead(std::string* body, const query::RankRequest& request,
                const query::BucketGrid& grid) {
  *body += "{\"project\":";
  AppendString(body, request.metric.project);
  *body += ",\"run\":";
  AppendString(body, request.metric.run);
  *body += ",\"metric\":";
  AppendString(body, request.metric.metric);
  *body += ",\"x\":\"step\",\"grid\":{\"from\":";
  AppendNumber(body, grid.from, NonFinite::kStrings);
  *body += ",\"to\":";
  AppendNumber(body, grid.to, NonFinite::kStrings);
  *body += ",\"buckets\":" + std::to_string(grid.count) + ",\"width\":";
  AppendNumber(body, grid.Width(), NonFinite::kStrings);
  body->push_back('}');
}

// A statistic over non-NaN values: null when the bucket holds NaNs only.
void AppendStat(std::string* body, const query::RankBucket& b, double v) {
  if (b.count > b.nan_count)
    AppendNumber(body, v, NonFinite::kStrings);
  else
    *body += "null";
}

// GET /api/v1/series/ranks?project=P&run=R&metric=M&buckets=N[&from=&to=]
void HandleRankAggregates(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  query::RankRequest request;
  if (auto error = ParseRankRequest(req, &request)) return respond(std::move(*error));
  Result<query::RankAggregates> answer = ctx.querier.AggregateRanks(request);
  if (!answer.ok())
    return respond(HttpResponse::Error(HttpStatusOf(answer.status()), answer.status().message()));
  std::string body;
  body.reserve(answer->buckets.size() * 200 + 256);
  AppendHead(&body, request, answer->grid);
  body += ",\"rank_count\":" + std::to_string(answer->rank_count) + ",\"buckets\":[";
  for (size_t k = 0; k < answer->buckets.size(); ++k) {
    const query::RankBucket& b = answer->buckets[k];
    if (k) body.push_back(',');
    body += "{\"i\":" + std::to_string(b.index) + ",\"count\":" + std::to_string(b.count) +
            ",\"nan_count\":" + std::to_string(b.nan_count) +
            ",\"ranks\":" + std::to_string(b.ranks) + ",\"first_step\":";
    AppendInt(&body, b.first_step);
    body += ",\"last_step\":";
    AppendInt(&body, b.last_step);
    body += ",\"min\":";
    AppendStat(&body, b, b.min);
    body += ",\"min_rank\":";
    if (b.count > b.nan_count)
      body += std::to_string(b.min_rank);
    else
      body += "null";
    body += ",\"max\":";
    AppendStat(&body, b, b.max);
    body += ",\"max_rank\":";
    if (b.count > b.nan_count)
      body += std::to_string(b.max_rank);
    else
      body += "null";
    body += ",\"mean\":";
    AppendStat(&body, b, b.mean);
    body += ",\"median\":";
    AppendStat(&body, b, b.median);
    body += ",\"p10\":";
    AppendStat(&body, b, b.p10);
    body += ",\"p90\":";
    AppendStat(&body, b, b.p90);
    body.push_back('}');
  }
  body += "]}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

// GET /api/v1/series/rank_matrix?project=P&run=R&metric=M&buckets=N[&from=&to=]: per rank, its
// non-empty buckets as columns.
void HandleRankMatrix(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  query::RankRequest request;
  if (auto error = ParseRankRequest(req, &request)) return respond(std::move(*error));
  Result<query::RankMatrix> answer = ctx.querier.RankMatrixOf(request);
  if (!answer.ok())
    return respond(HttpResponse::Error(HttpStatusOf(answer.status()), answer.status().message()));
  std::string body;
  AppendHead(&body, request, answer->grid);
  body += ",\"ranks\":[";
  for (size_t r = 0; r < answer->rows.size(); ++r) {
    const query::RankMatrixRow& row = answer->rows[r];
    if (r) body.push_back(',');
    body += "{\"rank\":" + std::to_string(row.rank);
    auto column = [&](const char* name, auto append) {
      body += ",\"";
      body += name;
      body += "\":[";
      for (size_t k = 0; k < row.buckets.size(); ++k) {
        if (k) body.push_back(',');
        append(row.buckets[k]);
      }
      body.push_back(']');
    };
    using B = query::Bucket;
    auto stat = [&](const B& b, double v) {
      if (b.count > b.nan_count)
        AppendNumber(&body, v, NonFinite::kStrings);
      else
        body += "null";
    };
    column("i", [&](const B& b) { AppendInt(&body, b.index); });
    column("count", [&](const B& b) { AppendInt(&body, static_cast<int64_t>(b.count)); });
    column("mean",
           [&](const B& b) { stat(b, b.sum / static_cast<double>(b.count - b.nan_count)); });
    column("min", [&](const B& b) { stat(b, b.min); });
    column("max", [&](const B& b) { stat(b, b.max); });
    body.push_back('}');
  }
  body += "]}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

// GET /api/v1/ranks?project=P&run=R
void HandleRanks(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  storage::RunInfo info;
  if (!RequireRun(ctx, req, respond, &info)) return;
  Result<query::RankTable> table =
      ctx.querier.ListRanks({info.project, info.id}, ctx.clock.NowUnixSeconds());
  if (!table.ok())
    return respond(HttpResponse::Error(HttpStatusOf(table.status()), table.status().message()));
  std::string body = "{\"project\":";
  AppendString(&body, info.project);
  body += ",\"run\":";
  AppendString(&body, info.id);
  body += ",\"world_size\":" + std::to_string(table->world_size) + ",\"median_step\":";
  AppendInt(&body, table->median_step);
  body += ",\"ranks\":[";
  for (size_t i = 0; i < table->ranks.size(); ++i) {
    const query::RankRow& row = table->ranks[i];
    const storage::RankState& s = row.state;
    if (i) body.push_back(',');
    body += "{\"rank\":" + std::to_string(s.rank) +
            ",\"local_rank\":" + std::to_string(s.local_rank) +
            ",\"world_size\":" + std::to_string(s.world_size) + ",\"host\":";
    AppendString(&body, s.host);
    body += ",\"last_step\":";
    AppendInt(&body, s.last_step);
    body += ",\"last_write_time\":";
    AppendNumber(&body, s.last_write_time, NonFinite::kStrings);
    body += ",\"steps_per_second\":";
    AppendNumber(&body, row.steps_per_second, NonFinite::kStrings);
    body += ",\"lag\":";
    AppendInt(&body, row.lag);
    body += ",\"status\":\"";
    body += query::RankLivenessName(row.liveness);
    body += "\",\"last_heartbeat\":";
    AppendNumber(&body, s.last_heartbeat, NonFinite::kStrings);
    body += ",\"heartbeat_interval\":";
    AppendNumber(&body, s.heartbeat_interval, NonFinite::kStrings);
    body.push_back('}');
  }
  body += "]}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

}  // namespace

void RegisterRankRoutes(HttpServer& server, ApiContext& ctx) {
  RouteStoreRead(server, ctx, "/api/v1/series/ranks", HandleRankAggregates);
  RouteStoreRead(server, ctx, "/api/v1/series/rank_matrix", HandleRankMatrix);
  RouteStoreRead(server, ctx, "/api/v1/ranks", HandleRanks);
}

}  // namespace trainwatch::api
