// InfluxDB's write endpoints and /ping, so that Telegraf, the influx clients and curl scripts
// write to trainwatch unchanged (docs/influx.md): POST /write (1.x), POST /api/v2/write (2.x),
// GET /ping. Points are mapped to runs, metrics and steps by influx/point_mapping.h and stored
// through the ingestor like any write; answers use InfluxDB's status codes and error bodies.
#include <string>

#include "api/json_writer.h"
#include "api/routes.h"
#include "influx/gzip.h"
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
}

}  // namespace trainwatch::api
