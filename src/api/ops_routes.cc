// GET /healthz, GET /metrics and GET /api/v1/info.
#include "api/json_writer.h"
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
  // Lets a client that knows only the HTTP URL find the gRPC ingest: an address it can use (none
  // for a loopback address asked from elsewhere) and whether it speaks TLS.
  server.Route("GET", "/api/v1/info", [&ctx](HttpRequest&& request, Responder respond) {
    std::string body = "{\"version\":";
    AppendString(&body, ctx.server.version);
    body += ",\"grpc\":";
    AppendString(&body, AdvertisedGrpcAddress(ctx.server, request.remote));
    body += ctx.server.grpc_tls ? ",\"grpc_tls\":true" : ",\"grpc_tls\":false";
    const bool keyed = ctx.keys && ctx.keys->enabled();
    body += keyed ? ",\"api_key_required\":true}\n" : ",\"api_key_required\":false}\n";
    respond(HttpResponse::Json(200, std::move(body)));
  });
}

}  // namespace trainwatch::api
