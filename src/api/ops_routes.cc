// GET /healthz and GET /metrics.
#include "api/routes.h"

namespace trainwatch::api {

void RegisterOpsRoutes(HttpServer& server, ApiContext& ctx) {
  server.Route("GET", "/healthz", [](HttpRequest&&, Responder respond) {
    respond(HttpResponse::Json(200, "{\"status\":\"ok\"}\n"));
  });
  server.Route("GET", "/metrics", [&ctx](HttpRequest&&, Responder respond) {
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = ctx.metrics.Render();
    respond(std::move(r));
  });
}

}  // namespace trainwatch::api
