// GET /api/v1/runs (run search), /api/v1/run and /api/v1/metrics.
#include "api/json_writer.h"
#include "api/query_common.h"
#include "api/routes.h"
#include "api/run_search.h"

namespace trainwatch::api {
namespace {

void AppendLatest(std::string* out,
                  const std::vector<std::pair<std::string, storage::Point>>& latest) {
  out->push_back('{');
  bool first = true;
  for (const auto& [name, p] : latest) {
    if (!first) out->push_back(',');
    first = false;
    // No time: the run's last_write_time says how fresh it is, and a table of many runs does not
    // need one per value (it is a third of the bytes of this, the heaviest listing).
    AppendString(out, name);
    *out += ":{\"step\":";
    AppendInt(out, p.step);
    *out += ",\"value\":";
    AppendNumber(out, p.value, NonFinite::kStrings);
    out->push_back('}');
  }
  out->push_back('}');
}

// The run's fields as JSON members, without the braces (callers add their own members).
void AppendRunFields(std::string* out, const storage::RunInfo& info) {
  *out += "\"project\":";
  AppendString(out, info.project);
  *out += ",\"id\":";
  AppendString(out, info.id);
  *out += ",\"name\":";
  AppendString(out, info.name);
  *out += ",\"group\":";
  AppendString(out, info.group);
  *out += ",\"tags\":[";
  bool first = true;
  for (const std::string& tag : info.tags) {
    if (!first) out->push_back(',');
    first = false;
    AppendString(out, tag);
  }
  *out += "],\"config\":" + info.config.dump() + ",\"status\":\"";
  *out += storage::RunStatusName(info.status);
  *out += "\",\"start_time\":";
  AppendNumber(out, info.start_time, NonFinite::kStrings);
  *out += ",\"end_time\":";
  AppendNumber(out, info.end_time, NonFinite::kStrings);
  *out += ",\"last_write_time\":";
  AppendNumber(out, info.last_write_time, NonFinite::kStrings);
  *out += ",\"host\":";
  AppendString(out, info.host);
  *out += ",\"last_heartbeat\":";
  AppendNumber(out, info.last_heartbeat, NonFinite::kStrings);
  *out += ",\"heartbeat_interval\":";
  AppendNumber(out, info.heartbeat_interval, NonFinite::kStrings);
  *out += info.has_graph ? ",\"has_graph\":true" : ",\"has_graph\":false";
  *out += info.rank_count > 0 ? ",\"distributed\":true" : ",\"distributed\":false";
  *out += ",\"world_size\":" + std::to_string(info.world_size) +
          ",\"rank_count\":" + std::to_string(info.rank_count);
}

void HandleRuns(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  query::RunSearch query;
  if (auto error = ParseRunSearch(req, &query)) return respond(std::move(*error));
  Result<query::RunPage> page = ctx.querier.SearchRuns(query);
  if (!page.ok())
    return respond(HttpResponse::Error(HttpStatusOf(page.status()), page.status().message()));
  std::string body;
  body.reserve(page->rows.size() * (256 + 64 * query.latest.size()));
  body += "{\"total\":" + std::to_string(page->total) +
          ",\"offset\":" + std::to_string(query.offset) +
          ",\"limit\":" + std::to_string(query.limit) + ",\"runs\":[";
  for (size_t i = 0; i < page->rows.size(); ++i) {
    if (i) body.push_back(',');
    body.push_back('{');
    AppendRunFields(&body, page->rows[i].info);
    body += ",\"latest\":";
    AppendLatest(&body, page->rows[i].latest);
    body.push_back('}');
  }
  body += "]}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

std::string MetricsJson(const std::vector<storage::MetricInfo>& metrics) {
  std::string body = "[";
  for (size_t i = 0; i < metrics.size(); ++i) {
    const storage::MetricInfo& m = metrics[i];
    if (i) body.push_back(',');
    body += "{\"name\":";
    AppendString(&body, m.name);
    body += ",\"kind\":\"" + m.kind + "\",\"count\":" + std::to_string(m.count) +
            ",\"first_step\":" + std::to_string(m.first_step) +
            ",\"last_step\":" + std::to_string(m.last_step) +
            ",\"timelines\":" + std::to_string(m.timelines) + ",\"latest\":";
    if (m.has_latest) {
      AppendPoint(&body, m.latest);
    } else {
      body += "null";
    }
    body.push_back('}');
  }
  body.push_back(']');
  return body;
}

void HandleRun(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  storage::RunInfo info;
  if (!RequireRun(ctx, req, respond, &info)) return;
  std::string body = "{";
  AppendRunFields(&body, info);
  body += ",\"metrics\":" + MetricsJson(ctx.querier.ListMetrics({info.project, info.id})) + "}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

void HandleMetrics(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  storage::RunInfo info;
  if (!RequireRun(ctx, req, respond, &info)) return;
  respond(HttpResponse::Json(200,
                             MetricsJson(ctx.querier.ListMetrics({info.project, info.id})) + "\n"));
}

}  // namespace

void RegisterRunRoutes(HttpServer& server, ApiContext& ctx) {
  RouteStoreRead(server, ctx, "/api/v1/runs", HandleRuns);
  RouteStoreRead(server, ctx, "/api/v1/run", HandleRun);
  RouteStoreRead(server, ctx, "/api/v1/metrics", HandleMetrics);
}

}  // namespace trainwatch::api
