// InfluxDB's endpoints, so that Telegraf, the influx clients, Grafana's InfluxDB data source and
// curl scripts work against trainwatch unchanged (docs/influx.md): POST /write (1.x),
// POST /api/v2/write (2.x), GET|POST /query (InfluxQL) and GET /ping. Points are mapped to runs,
// metrics and steps by influx/point_mapping.h and stored through the ingestor like any write;
// queries are answered by influx/influxql_executor.h; answers use InfluxDB's status codes and
// bodies.
#include <cmath>
#include <string>

#include "alerting/alert_manager.h"
#include "api/http_target.h"
#include "api/json_writer.h"
#include "api/routes.h"
#include "influx/gzip.h"
#include "influx/influxql_executor.h"
#include "influx/influxql_parser.h"
#include "influx/line_protocol.h"
#include "influx/point_mapping.h"

namespace trainwatch::api {
namespace {

// The InfluxDB version the endpoints behave as (clients read it from /ping).
constexpr const char* kInfluxVersion = "1.8.10";
// A gzip body may inflate to this much.
constexpr size_t kMaxInflatedBytes = 256 << 20;

enum class Api { kV1, kV2 };

// InfluxDB's error body: {"error": "..."} for 1.x, {"code": "...", "message": "..."} for 2.x.
HttpResponse InfluxError(Api api, int status, const std::string& message) {
  std::string body;
  if (api == Api::kV1) {
    body = "{\"error\":";
    AppendString(&body, message);
  } else {
    body = "{\"code\":";
    AppendString(&body, status == 404   ? "not found"
                        : status == 413 ? "request too large"
                        : status >= 500 ? "internal error"
                                        : "invalid");
    body += ",\"message\":";
    AppendString(&body, message);
  }
  body += "}\n";
  return HttpResponse::Json(status, std::move(body));
}

HttpResponse NoContent() {
  HttpResponse r;
  r.status = 204;
  r.content_type.clear();
  r.headers.emplace_back("X-Influxdb-Version", kInfluxVersion);
  return r;
}

// The 1.x and 2.x names of a precision: 2.x takes ns, us, ms, s.
Result<influx::Precision> PrecisionOf(Api api, const std::string& text) {
  if (api == Api::kV2 && !text.empty() && text != "ns" && text != "us" && text != "ms" &&
      text != "s") {
    return Status::InvalidArgument("invalid precision '" + text + "': one of ns, us, ms, s");
  }
  return influx::ParsePrecision(text);
}

void HandleWrite(ApiContext& ctx, Api api, HttpRequest&& req, Responder respond) {
  const std::string database = req.Param(api == Api::kV1 ? "db" : "bucket");
  if (database.empty()) {
    respond(InfluxError(api, 400, api == Api::kV1 ? "database is required" : "bucket is required"));
    return;
  }
  Result<influx::Precision> precision = PrecisionOf(api, req.Param("precision"));
  if (!precision.ok()) {
    respond(InfluxError(api, 400, precision.status().message()));
    return;
  }
  // The parsed points point into the body: both live in this holder until the write is done.
  struct Body {
    std::string text;
    influx::ParsedBody parsed;
  };
  auto body = std::make_shared<Body>();
  body->text = std::move(req.body);
  if (req.Header("content-encoding") == "gzip") {
    Result<std::string> inflated = influx::Gunzip(body->text, kMaxInflatedBytes);
    if (!inflated.ok()) {
      const bool too_large = inflated.status().code() == StatusCode::kResourceExhausted;
      respond(InfluxError(api, too_large ? 413 : 400, inflated.status().message()));
      return;
    }
    body->text = std::move(*inflated);
  }
  body->parsed = influx::ParseLineProtocol(body->text, *precision);
  influx::MappedPoints mapped =
      influx::MapPoints(body->parsed, database, ctx.clock.NowUnixSeconds());
  std::vector<std::string> refused;
  for (const influx::LineError& e : body->parsed.errors) refused.push_back(e.message);
  for (const influx::LineError& e : mapped.errors) refused.push_back(e.message);
  if (mapped.request.runs_size() == 0) {
    if (refused.empty()) {
      respond(NoContent());  // an empty body, or only comments
    } else {
      respond(InfluxError(api, 400, refused.front()));
    }
    return;
  }
  ctx.ingestor.WriteProto(
      std::move(mapped.request),
      [api, respond, refused = std::move(refused), body](ingest::IngestResult result) mutable {
        if (!result.status.ok()) {
          respond(InfluxError(api, HttpStatusOf(result.status), result.status.message()));
          return;
        }
        for (const ingest::LineError& e : result.errors) refused.push_back(e.message);
        if (refused.empty()) {
          respond(NoContent());
          return;
        }
        // What InfluxDB says when it kept the valid points of a batch with bad ones.
        respond(InfluxError(
            api, 400,
            "partial write: " + refused.front() + " dropped=" + std::to_string(refused.size())));
      },
      req.principal.projects);
}

// A parameter of /query: from the URL, or from a POST's form body (Grafana's POST method).
std::string QueryParam(const HttpRequest& req, const std::string& name) {
  std::string value = req.Param(name);
  if (!value.empty() || req.method != "POST") return value;
  const auto form = ParseQueryString(req.body);
  auto it = form.find(name);
  return it == form.end() ? "" : it->second;
}

// The measurement trainwatch_alerts (influx/alerts_measurement.h): a project's alerts, newest
// 100,000.
influx::AlertSource AlertsOf(const alerting::AlertManager& alerts) {
  return [&alerts](const std::string& project) -> Result<std::vector<influx::AlertEvent>> {
    alerting::AlertQuery query;
    query.project = project;
    query.limit = 100'000;
    std::vector<influx::AlertEvent> events;
    for (const alerting::AlertRecord& a : alerts.List(query)) {
      influx::AlertEvent e;
      const double at = std::isfinite(a.time) && a.time > 0 ? a.time : a.started_at;
      e.time_ns = static_cast<int64_t>(std::llround(at * 1e6)) * 1000;
      e.tags = {{"project", a.project},
                {"run", a.run},
                {"severity", a.severity},
                {"kind", a.kind},
                {"name", a.name},
                {"metric", a.metric},
                {"status", std::string(alerting::StatusName(a.status))}};
      e.text = a.message;
      e.title = a.name + " on " + a.run;
      e.value = a.value;
      e.step = a.step;
      if (a.status == alerting::AlertStatus::kResolved && a.resolved_at > 0) {
        e.end_ms = static_cast<int64_t>(std::llround(a.resolved_at * 1000));
      }
      events.push_back(std::move(e));
    }
    return events;
  };
}

void HandleQuery(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  const std::string q = QueryParam(req, "q");
  if (q.empty()) {
    respond(InfluxError(Api::kV1, 400, "missing required parameter \"q\""));
    return;
  }
  Result<std::vector<influx::ql::Statement>> statements = influx::ql::ParseInfluxQL(q);
  if (!statements.ok()) {
    respond(InfluxError(Api::kV1, 400, "error parsing query: " + statements.status().message()));
    return;
  }
  influx::InfluxQueryOptions options;
  options.database = QueryParam(req, "db");
  options.epoch = QueryParam(req, "epoch");
  options.now = ctx.clock.NowUnixSeconds();
  if (ctx.alerts != nullptr) options.alerts = AlertsOf(*ctx.alerts);
  if (!options.epoch.empty() && !influx::ParsePrecision(options.epoch).ok()) {
    respond(InfluxError(Api::kV1, 400, "invalid epoch '" + options.epoch + "'"));
    return;
  }
  // A key bound to projects reads only those databases.
  const auth::Principal& who = req.principal;
  if (!options.database.empty() && !who.SeesProject(options.database)) {
    respond(
        InfluxError(Api::kV1, 403, "this key may not read database '" + options.database + "'"));
    return;
  }
  for (const influx::ql::Statement& st : *statements) {
    const auto* show = std::get_if<influx::ql::ShowStatement>(&st);
    const auto* select = std::get_if<influx::ql::SelectStatement>(&st);
    bool other_db = show && !show->database.empty() && !who.SeesProject(show->database);
    if (show && show->what == influx::ql::ShowStatement::What::kDatabases && !who.projects.empty())
      other_db = true;
    for (const auto& src : select ? select->sources : std::vector<influx::ql::Source>{}) {
      other_db = other_db || (!src.database.empty() && !who.SeesProject(src.database));
    }
    if (other_db) {
      respond(InfluxError(Api::kV1, 403, "this key may read only its projects' databases"));
      return;
    }
  }
  HttpResponse r =
      HttpResponse::Json(200, influx::ExecuteInfluxQL(*statements, options, ctx.querier));
  r.headers.emplace_back("X-Influxdb-Version", kInfluxVersion);
  respond(std::move(r));
}

}  // namespace

void RegisterInfluxRoutes(HttpServer& server, ApiContext& ctx) {
  RouteOptions write;  // write scope, the default for a POST
  // What Telegraf (text/plain), the influx clients (application/octet-stream) and curl send; the
  // cross-origin check on Origin still keeps browsers' foreign pages out.
  write.body_types = {"text/plain", "application/octet-stream", "application/x-www-form-urlencoded",
                      ""};
  write.projects_in_body = true;
  server.Route(
      "POST", "/write",
      [&ctx](HttpRequest&& req, Responder respond) {
        HandleWrite(ctx, Api::kV1, std::move(req), std::move(respond));
      },
      write);
  server.Route(
      "POST", "/api/v2/write",
      [&ctx](HttpRequest&& req, Responder respond) {
        HandleWrite(ctx, Api::kV2, std::move(req), std::move(respond));
      },
      write);
  server.Route("GET", "/ping", [](HttpRequest&&, Responder respond) { respond(NoContent()); });
  // Queries read the store: on the query threads. The database is checked against the key here.
  RouteOptions query = RouteOptions::Scoped(auth::Scope::kRead, /*projects_in_body=*/true);
  query.offload = true;
  query.body_types = {"application/x-www-form-urlencoded", "text/plain", ""};
  for (const char* method : {"GET", "POST"}) {
    server.Route(
        method, "/query",
        [&ctx](HttpRequest&& req, Responder respond) {
          HandleQuery(ctx, std::move(req), std::move(respond));
        },
        query);
  }
}

}  // namespace trainwatch::api
