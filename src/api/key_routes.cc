// The API keys and the audit log (admin scope): GET /api/v1/keys, POST /api/v1/keys,
// POST /api/v1/keys/revoke, GET /api/v1/audit; and short-lived tokens (any key):
// POST /api/v1/tokens.
#include <nlohmann/json.hpp>

#include "api/query_params.h"
#include "api/routes.h"
#include "common/duration.h"
#include "common/json.h"

namespace trainwatch::api {
namespace {

nlohmann::json KeyJson(const auth::KeyRecord& k) {
  return {{"name", k.name},
          {"scope", auth::ScopeName(k.scope)},
          {"projects", k.projects},
          {"created_at", k.created_at},
          {"allow_from", k.allow_from.text()},
          {"expires_at", k.expires_at > 0 ? nlohmann::json(k.expires_at) : nlohmann::json()}};
}

// {"name": N, "scope": "read|write|admin", "projects": [...], "expires": "30d", "allow_from": "10.0.0.0/8"}
Result<nlohmann::json> CreateKey(auth::KeyStore& keys, Clock& clock, const std::string& body) {
  TW_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(body));
  if (!j.is_object()) return Status::InvalidArgument("the body must be a JSON object");
  std::string name, scope_text = "read";
  std::vector<std::string> projects;
  double expires_at = 0;
  std::string allow_from;
  try {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "name") name = it->get<std::string>();
      else if (it.key() == "scope") scope_text = it->get<std::string>();
      else if (it.key() == "projects") projects = it->get<std::vector<std::string>>();
      else if (it.key() == "allow_from") allow_from = it->get<std::string>();
      else if (it.key() == "expires") {
        TW_ASSIGN_OR_RETURN(double seconds, ParseDuration(it->get<std::string>()));
        expires_at = clock.NowUnixSeconds() + seconds;
      } else {
        return Status::InvalidArgument("unknown field '" + it.key() + "'");
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("wrong type: ") + e.what());
  }
  auth::Scope scope;
  if (!auth::ParseScope(scope_text, &scope)) {
    return Status::InvalidArgument("field 'scope' must be read, write or admin, not '" + scope_text + "'");
  }
  Result<CidrList> networks = CidrList::Parse(allow_from);
  if (!networks.ok()) return networks.status().WithContext("field 'allow_from'");
  TW_ASSIGN_OR_RETURN(auth::NewKey created, keys.Create(name, scope, projects, expires_at, std::move(*networks)));
  nlohmann::json out = KeyJson(created.record);
  out["key"] = created.key;  // shown this once
  return out;
}

}  // namespace

// GET /api/v1/audit?key=&action=&failures=1&since=&until=&limit=&offset= (admin), newest first.
void HandleAudit(auth::AuditLog& audit, const HttpRequest& req, Responder respond) {
  auth::AuditQuery q;
  q.key = req.Param("key");
  q.action = req.Param("action");
  q.failures_only = req.Param("failures") == "1";
  int64_t limit = 100, offset = 0;
  double since = 0, until = 0;
  if ((!req.Param("limit").empty() && (!ParseInt(req.Param("limit"), &limit) || limit < 1 || limit > 10000)) ||
      (!req.Param("offset").empty() && (!ParseInt(req.Param("offset"), &offset) || offset < 0)) ||
      (!req.Param("since").empty() && !ParseDouble(req.Param("since"), &since)) ||
      (!req.Param("until").empty() && !ParseDouble(req.Param("until"), &until))) {
    return respond(HttpResponse::Error(400, "limit is 1..10000, offset >= 0, since and until unix seconds"));
  }
  q.limit = static_cast<size_t>(limit);
  q.offset = static_cast<size_t>(offset);
  q.since = since;
  q.until = until;
  Result<std::vector<auth::AuditEntry>> entries = audit.Read(q);
  if (!entries.ok()) return respond(HttpResponse::Error(500, entries.status().message()));
  nlohmann::json list = nlohmann::json::array();
  for (const auth::AuditEntry& e : *entries) {
    nlohmann::json j = {{"time", e.time},     {"key", e.key},       {"remote", e.remote},
                        {"action", e.action}, {"target", e.target}, {"outcome", e.outcome}};
    if (!e.detail.empty()) j["detail"] = e.detail;
    list.push_back(std::move(j));
  }
  respond(HttpResponse::Json(200, nlohmann::json{{"entries", list}}.dump() + "\n"));
}

namespace {

// POST /api/v1/tokens (any key, no body): a short-lived token for the key the request carries,
// what a browser passes as ?token= where it cannot send the key in a header.
void HandleToken(const auth::TokenIssuer& tokens, const HttpRequest& req, Responder respond) {
  Result<auth::IssuedToken> issued = tokens.Issue(req.principal);
  if (!issued.ok()) return respond(HttpResponse::Error(HttpStatusOf(issued.status()), issued.status().message()));
  HttpResponse r = HttpResponse::Json(200, nlohmann::json{{"token", issued->token},
                                                          {"expires_at", issued->expires_at},
                                                          {"ttl_seconds", tokens.ttl_seconds()}}
                                               .dump() +
                                           "\n");
  r.headers = {{"Cache-Control", "no-store"}};
  respond(std::move(r));
}

}  // namespace

void RegisterKeyRoutes(HttpServer& server, ApiContext& ctx) {
  if (ctx.tokens) {
    server.Route(
        "POST", "/api/v1/tokens",
        [&tokens = *ctx.tokens](HttpRequest&& req, Responder respond) { HandleToken(tokens, req, std::move(respond)); },
        // Any key; a project-bound key's token carries all its projects.
        RouteOptions::Scoped(auth::Scope::kRead, /*projects_in_body=*/true));
  }
  if (ctx.audit) {
    server.Route(
        "GET", "/api/v1/audit",
        [&audit = *ctx.audit](HttpRequest&& req, Responder respond) { HandleAudit(audit, req, std::move(respond)); },
        RouteOptions::Scoped(auth::Scope::kAdmin));
  }
  if (!ctx.keys) return;
  auth::KeyStore& keys = *ctx.keys;
  const RouteOptions admin = RouteOptions::Scoped(auth::Scope::kAdmin);
  server.Route(
      "GET", "/api/v1/keys",
      [&keys](HttpRequest&&, Responder respond) {
        nlohmann::json list = nlohmann::json::array();
        for (const auth::KeyRecord& k : keys.List()) list.push_back(KeyJson(k));
        respond(HttpResponse::Json(200, nlohmann::json{{"keys", list}}.dump() + "\n"));
      },
      admin);
  server.Route(
      "POST", "/api/v1/keys",
      [&keys, &ctx](HttpRequest&& req, Responder respond) {
        Result<nlohmann::json> created = CreateKey(keys, ctx.clock, req.body);
        if (!created.ok()) return respond(HttpResponse::Error(HttpStatusOf(created.status()), created.status().message()));
        HttpResponse r = HttpResponse::Json(200, created->dump() + "\n");
        r.audit_target = "key=" + (*created)["name"].get<std::string>() + " scope=" + (*created)["scope"].get<std::string>();
        respond(std::move(r));
      },
      admin);
  server.Route(
      "POST", "/api/v1/keys/revoke",
      [&keys, &live = ctx.live](HttpRequest&& req, Responder respond) {
        Result<nlohmann::json> j = ParseJson(req.body);
        if (!j.ok()) return respond(HttpResponse::Error(400, j.status().message()));
        if (!j->is_object() || !(*j)["name"].is_string()) {
          return respond(HttpResponse::Error(400, "expected {\"name\": \"<key name>\"}"));
        }
        const std::string name = (*j)["name"].get<std::string>();
        std::string key_id;
        for (const auth::KeyRecord& k : keys.List()) {
          if (k.name == name) key_id = k.id;
        }
        Status s = keys.Revoke(name);
        // Its live connections (opened with the key or one of its tokens) end with it.
        if (s.ok() && !key_id.empty()) live.CloseKey(key_id);
        HttpResponse r = s.ok() ? HttpResponse::Json(200, "{\"revoked\":true}\n") : HttpResponse::Error(HttpStatusOf(s), s.message());
        r.audit_target = "key=" + name;
        respond(std::move(r));
      },
      admin);
}

}  // namespace trainwatch::api
