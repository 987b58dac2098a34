// Alerts, silences and rules: /api/v1/alerts, /api/v1/alerts/ack, /api/v1/silences,
// /api/v1/silences/expire, /api/v1/rules, /api/v1/rules/reload (docs/api.md "Alerts").
#include <nlohmann/json.hpp>

#include "api/query_params.h"
#include "api/routes.h"
#include "common/json.h"

namespace trainwatch::api {
namespace {

constexpr int64_t kMaxAlerts = 10'000;

HttpResponse JsonOf(const nlohmann::json& j) { return HttpResponse::Json(200, j.dump() + "\n"); }

// The request body as a JSON object, or an error response.
bool ParseBody(const HttpRequest& req, nlohmann::json* out, Responder& respond) {
  Result<nlohmann::json> parsed = ParseJson(req.body);
  if (!parsed.ok()) {
    respond(HttpResponse::Error(400, parsed.status().message()));
    return false;
  }
  if (!parsed->is_object()) {
    respond(HttpResponse::Error(400, "the body must be a JSON object"));
    return false;
  }
  *out = std::move(*parsed);
  return true;
}

// GET /api/v1/alerts?project&run&kind&metric&status=pending|firing|resolved|active&after_id&limit
void HandleList(alerting::AlertManager& alerts, HttpRequest&& req, Responder respond) {
  alerting::AlertQuery q;
  q.project = req.Param("project");
  q.run = req.Param("run");
  q.kind = req.Param("kind");
  q.metric = req.Param("metric");
  if (std::string s = req.Param("status"); s == "active") {
    q.active_only = true;
  } else if (!s.empty()) {
    auto status = alerting::ParseStatus(s);
    if (!status.ok()) return respond(HttpResponse::Error(400, status.status().message() + " (or active)"));
    q.status = *status;
  }
  int64_t v = 0;
  if (std::string s = req.Param("after_id"); !s.empty()) {
    if (!ParseInt(s, &v) || v < 0) return respond(HttpResponse::Error(400, "after_id must be a non-negative integer"));
    q.after_id = static_cast<uint64_t>(v);
  }
  if (std::string s = req.Param("limit"); !s.empty()) {
    if (!ParseInt(s, &v) || v < 1 || v > kMaxAlerts) {
      return respond(HttpResponse::Error(400, "limit must be an integer from 1 to " + std::to_string(kMaxAlerts)));
    }
    q.limit = static_cast<size_t>(v);
  }
  nlohmann::json list = nlohmann::json::array();
  for (const alerting::AlertRecord& a : alerts.List(q)) list.push_back(a.ToJson());
  respond(JsonOf({{"alerts", std::move(list)}}));
}

// POST /api/v1/alerts/ack {"id": N, "acknowledged": true, "by": "name"}
void HandleAck(alerting::AlertManager& alerts, HttpRequest&& req, Responder respond) {
  nlohmann::json body;
  if (!ParseBody(req, &body, respond)) return;
  if (!body.contains("id") || !body["id"].is_number_unsigned()) {
    return respond(HttpResponse::Error(400, "id: expected the alert's id (a positive integer)"));
  }
  if (body.contains("acknowledged") && !body["acknowledged"].is_boolean()) {
    return respond(HttpResponse::Error(400, "acknowledged: expected true or false"));
  }
  if (body.contains("by") && !body["by"].is_string()) return respond(HttpResponse::Error(400, "by: expected a string"));
  auto alert = alerts.Acknowledge(body["id"].get<uint64_t>(), body.value("acknowledged", true), body.value("by", ""));
  if (!alert.ok()) return respond(HttpResponse::Error(HttpStatusOf(alert.status()), alert.status().message()));
  respond(JsonOf({{"alert", alert->ToJson()}}));
}

// POST /api/v1/silences {"project","run","kind","name","comment","created_by", "duration": "2h" | "ends_at": T,
// "starts_at": T}
void HandleAddSilence(alerting::AlertManager& alerts, Clock& clock, HttpRequest&& req, Responder respond) {
  nlohmann::json body;
  if (!ParseBody(req, &body, respond)) return;
  alerting::Silence s;
  for (auto [key, field] : {std::pair{"project", &s.project}, {"run", &s.run}, {"kind", &s.kind}, {"name", &s.name},
                            {"comment", &s.comment}, {"created_by", &s.created_by}}) {
    if (!body.contains(key)) continue;
    if (!body[key].is_string()) return respond(HttpResponse::Error(400, std::string(key) + ": expected a string"));
    *field = body[key].get<std::string>();
  }
  for (auto [key, field] : {std::pair{"starts_at", &s.starts_at}, {"ends_at", &s.ends_at}}) {
    if (!body.contains(key)) continue;
    if (!body[key].is_number()) return respond(HttpResponse::Error(400, std::string(key) + ": expected unix seconds"));
    *field = body[key].get<double>();
  }
  if (body.contains("duration")) {
    if (!body["duration"].is_string()) {
      return respond(HttpResponse::Error(400, "duration: expected a string such as \"2h\""));
    }
    auto seconds = rules::ParseDuration(body["duration"].get<std::string>());
    if (!seconds.ok()) return respond(HttpResponse::Error(400, "duration: " + seconds.status().message()));
    s.ends_at = (s.starts_at > 0 ? s.starts_at : clock.NowUnixSeconds()) + *seconds;
  }
  if (s.ends_at == 0) return respond(HttpResponse::Error(400, "give the silence a duration or an ends_at"));
  auto added = alerts.AddSilence(std::move(s));
  if (!added.ok()) return respond(HttpResponse::Error(HttpStatusOf(added.status()), added.status().message()));
  respond(JsonOf({{"silence", added->ToJson()}}));
}

// POST /api/v1/silences/expire {"id": N}
void HandleExpireSilence(alerting::AlertManager& alerts, HttpRequest&& req, Responder respond) {
  nlohmann::json body;
  if (!ParseBody(req, &body, respond)) return;
  if (!body.contains("id") || !body["id"].is_number_unsigned()) {
    return respond(HttpResponse::Error(400, "id: expected the silence's id (a positive integer)"));
  }
  auto s = alerts.ExpireSilence(body["id"].get<uint64_t>());
  if (!s.ok()) return respond(HttpResponse::Error(HttpStatusOf(s.status()), s.status().message()));
  respond(JsonOf({{"silence", s->ToJson()}}));
}

}  // namespace

void RegisterAlertRoutes(HttpServer& server, ApiContext& ctx) {
  if (!ctx.alerts) return;
  alerting::AlertManager& alerts = *ctx.alerts;
  server.Route("GET", "/api/v1/alerts", [&alerts](HttpRequest&& req, Responder respond) {
    HandleList(alerts, std::move(req), std::move(respond));
  });
  // Acknowledging, silencing and reloading rules change what everyone is told: admin keys only.
  const RouteOptions admin = RouteOptions::Scoped(auth::Scope::kAdmin);
  server.Route(
      "POST", "/api/v1/alerts/ack",
      [&alerts](HttpRequest&& req, Responder respond) { HandleAck(alerts, std::move(req), std::move(respond)); },
      admin);
  server.Route("GET", "/api/v1/silences", [&alerts](HttpRequest&& req, Responder respond) {
    nlohmann::json list = nlohmann::json::array();
    for (const alerting::Silence& s : alerts.Silences(req.Param("all") == "1")) list.push_back(s.ToJson());
    respond(JsonOf({{"silences", std::move(list)}}));
  });
  server.Route(
      "POST", "/api/v1/silences",
      [&alerts, &ctx](HttpRequest&& req, Responder respond) {
        HandleAddSilence(alerts, ctx.clock, std::move(req), std::move(respond));
      },
      admin);
  server.Route(
      "POST", "/api/v1/silences/expire",
      [&alerts](HttpRequest&& req, Responder respond) {
        HandleExpireSilence(alerts, std::move(req), std::move(respond));
      },
      admin);
  server.Route("GET", "/api/v1/rules", [&alerts](HttpRequest&&, Responder respond) {
    respond(JsonOf(alerts.rules()->ToJson()));
  });
  server.Route(
      "POST", "/api/v1/rules/reload",
      [&ctx](HttpRequest&&, Responder respond) {
        if (!ctx.reload_rules) return respond(HttpResponse::Error(404, "no rule file is configured (--alerting FILE)"));
        Result<std::string> summary = ctx.reload_rules();
        if (!summary.ok()) return respond(HttpResponse::Error(400, summary.status().message()));
        respond(JsonOf({{"reloaded", true}, {"summary", *summary}}));
      },
      admin);
}

}  // namespace trainwatch::api
