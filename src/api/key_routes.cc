// The API keys (admin scope): GET /api/v1/keys, POST /api/v1/keys, POST /api/v1/keys/revoke.
#include <nlohmann/json.hpp>

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
          {"expires_at", k.expires_at > 0 ? nlohmann::json(k.expires_at) : nlohmann::json()}};
}

// {"name": N, "scope": "read|write|admin", "projects": [...], "expires": "30d"}
Result<nlohmann::json> CreateKey(auth::KeyStore& keys, Clock& clock, const std::string& body) {
  TW_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(body));
  if (!j.is_object()) return Status::InvalidArgument("the body must be a JSON object");
  std::string name, scope_text = "read";
  std::vector<std::string> projects;
  double expires_at = 0;
  try {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "name") name = it->get<std::string>();
      else if (it.key() == "scope") scope_text = it->get<std::string>();
      else if (it.key() == "projects") projects = it->get<std::vector<std::string>>();
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
  TW_ASSIGN_OR_RETURN(std::string key, keys.Create(name, scope, projects, expires_at));
  for (const auth::KeyRecord& k : keys.List()) {
    if (k.name != name) continue;
    nlohmann::json out = KeyJson(k);
    out["key"] = key;  // shown this once
    return out;
  }
  return Status::Internal("key '" + name + "' vanished after its creation");
}

}  // namespace

void RegisterKeyRoutes(HttpServer& server, ApiContext& ctx) {
  if (!ctx.keys) return;
  auth::KeyStore& keys = *ctx.keys;
  const RouteOptions admin{.scope = auth::Scope::kAdmin};
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
        respond(HttpResponse::Json(200, created->dump() + "\n"));
      },
      admin);
  server.Route(
      "POST", "/api/v1/keys/revoke",
      [&keys](HttpRequest&& req, Responder respond) {
        Result<nlohmann::json> j = ParseJson(req.body);
        if (!j.ok()) return respond(HttpResponse::Error(400, j.status().message()));
        if (!j->is_object() || !(*j)["name"].is_string()) {
          return respond(HttpResponse::Error(400, "expected {\"name\": \"<key name>\"}"));
        }
        Status s = keys.Revoke((*j)["name"].get<std::string>());
        if (!s.ok()) return respond(HttpResponse::Error(HttpStatusOf(s), s.message()));
        respond(HttpResponse::Json(200, "{\"revoked\":true}\n"));
      },
      admin);
}

}  // namespace trainwatch::api
