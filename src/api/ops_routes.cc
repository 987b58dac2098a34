// GET /healthz, GET /metrics and GET /api/v1/info.
#include "api/json_writer.h"
#include "api/routes.h"

namespace trainwatch::api {

void RegisterOpsRoutes(HttpServer& server, ApiContext& ctx) {
  // 503 "degraded" while the disk refuses writes: the write-ahead log has stopped (every write is
  // refused until a retry succeeds), the store refuses sealed chunks (writes go on; checkpoints
  // wait), or the notification outbox refused an alert's notification (until one is queued
  // again). The log and the store clear by themselves once space returns (docs/operations.md).
  // In a cluster also while the node's store misses stream messages removed before it applied
  // them (until it is rebuilt from a snapshot, docs/cluster.md). The reason names every part
  // degraded, separated by "; ".
  server.Route("GET", "/healthz", [&ctx](HttpRequest&&, Responder respond) {
    std::string reason;
    auto note = [&reason](const char* part, const Status& s) {
      if (s.ok()) return;
      reason += (reason.empty() ? "" : "; ") + std::string(part) + ": " + s.ToString();
    };
    note("write-ahead log", ctx.engine.LogHealth());
    note("store", ctx.engine.StoreHealth());
    if (ctx.outbox_health) note("notification outbox", ctx.outbox_health());
    if (ctx.cluster_health) note("cluster", ctx.cluster_health());
    if (!reason.empty()) {
      std::string body = "{\"status\":\"degraded\",\"reason\":";
      AppendString(&body, reason);
      respond(HttpResponse::Json(503, std::move(body) + "}\n"));
      return;
    }
    respond(HttpResponse::Json(200, "{\"status\":\"ok\"}\n"));
  });
  server.Route("GET", "/metrics", [&ctx](HttpRequest&&, Responder respond) {
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = ctx.metrics.Render();
    respond(std::move(r));
  });
  // Lets a client that knows only the HTTP URL find the gRPC ingest: an address it can use (none
  // for a loopback address asked from elsewhere) and whether it speaks TLS; in cluster mode also
  // the node's view of its cluster (membership, ownership, consumer lag).
  server.Route("GET", "/api/v1/info", [&ctx](HttpRequest&& request, Responder respond) {
    std::string body = "{\"version\":";
    AppendString(&body, ctx.server.version);
    body += ",\"grpc\":";
    AppendString(&body, AdvertisedGrpcAddress(ctx.server, request.remote));
    body += ctx.server.grpc_tls ? ",\"grpc_tls\":true" : ",\"grpc_tls\":false";
    const bool keyed = ctx.keys && ctx.keys->enabled();
    body += keyed ? ",\"api_key_required\":true" : ",\"api_key_required\":false";
    if (ctx.cluster_info) body += ",\"cluster\":" + ClusterInfoJson(ctx.cluster_info());
    body += "}\n";
    respond(HttpResponse::Json(200, std::move(body)));
  });
  // Cluster mode: a store snapshot of this node, published to the cluster now (docs/cluster.md,
  // bounded rebuild). Answers the manifest written; 409 when a snapshot covering as much is in
  // place, 503 without NATS. Runs on a query thread: it copies and uploads the store.
  if (ctx.cluster_snapshot) {
    RouteOptions admin = RouteOptions::Scoped(auth::Scope::kAdmin);
    admin.offload = true;
    server.Route(
        "POST", "/api/v1/cluster/snapshot",
        [&ctx](HttpRequest&&, Responder respond) {
          Result<std::string> manifest = ctx.cluster_snapshot();
          if (!manifest.ok()) {
            const int code = manifest.status().code() == StatusCode::kAlreadyExists
                                 ? 409
                                 : HttpStatusOf(manifest.status());
            return respond(HttpResponse::Error(code, manifest.status().message()));
          }
          HttpResponse r = HttpResponse::Json(200, *manifest + "\n");
          r.audit_target = "cluster snapshot";
          respond(std::move(r));
        },
        admin);
  }
}

}  // namespace trainwatch::api
