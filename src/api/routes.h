// The REST API: registers every endpoint of docs/api.md on an HttpServer.
#pragma once

#include <functional>
#include <string>

#include "alerting/alert_manager.h"
#include "api/http_server.h"
#include "api/live_hub.h"
#include "api/server_info.h"
#include "common/metrics_registry.h"
#include "ingest/ingestor.h"
#include "query/querier.h"
#include "storage/engine.h"

namespace trainwatch::report {
class ReportStore;
}

namespace trainwatch::api {

// Everything the handlers use; must outlive the server.
struct ApiContext {
  storage::Engine& engine;
  // Every read of runs and scalar series (run_routes.cc, series_routes.cc, export_routes.cc).
  query::Querier& querier;
  ingest::Ingestor& ingestor;
  MetricsRegistry& metrics;
  LiveHub& live;
  ServerInfo server;
  Clock& clock;
  alerting::AlertManager* alerts = nullptr;  // null: alert routes are not registered
  // Re-reads the rule file and applies it; the error names file and line. Null without a file.
  std::function<Result<std::string>()> reload_rules{};
  auth::KeyStore* keys = nullptr;             // null: key routes are not registered
  auth::AuditLog* audit = nullptr;            // null: GET /api/v1/audit is not registered
  const auth::TokenIssuer* tokens = nullptr;  // null: POST /api/v1/tokens is not registered
  // Cluster mode: what this node knows of its cluster (the "cluster" field of /api/v1/info; must
  // not wait for NATS). Null on a single node.
  std::function<ClusterInfo()> cluster_info{};
  // Cluster mode: publishes a store snapshot of this node now (POST /api/v1/cluster/snapshot,
  // admin); returns the manifest's JSON. Null on a single node.
  std::function<Result<std::string>()> cluster_snapshot{};
  // Cluster mode: whether this node's store holds the whole ingest stream (ClusterNode::Health: the
  // stream removed messages before it applied them); /healthz reports it. Null on a single node.
  std::function<Status()> cluster_health{};
  // The notification outbox's health (NotificationOutbox::Health: the disk refused an enqueue);
  // /healthz reports it. Null without an outbox.
  std::function<Status()> outbox_health{};
  // The most points one raw /api/v1/series answer holds (the rest is paged with next_from).
  size_t max_raw_points = 1'000'000;
  // The reports stored when runs ended (GET /api/v1/report/stored); null: those routes answer 404.
  const report::ReportStore* report_store = nullptr;
};

void RegisterWriteRoutes(HttpServer& server, ApiContext& ctx);  // write_routes.cc
void RegisterRunRoutes(HttpServer& server, ApiContext& ctx);  // run_routes.cc (runs, run, metrics)
void RegisterSeriesRoutes(HttpServer& server, ApiContext& ctx);   // series_routes.cc
void RegisterExportRoutes(HttpServer& server, ApiContext& ctx);   // export_routes.cc
void RegisterRankRoutes(HttpServer& server, ApiContext& ctx);     // rank_routes.cc
void RegisterRunDataRoutes(HttpServer& server, ApiContext& ctx);  // run_data_routes.cc
void RegisterMediaRoutes(HttpServer& server, ApiContext& ctx);    // media_routes.cc
void RegisterOpsRoutes(HttpServer& server, ApiContext& ctx);      // ops_routes.cc
void RegisterAlertRoutes(HttpServer& server, ApiContext& ctx);    // alert_routes.cc
void RegisterKeyRoutes(HttpServer& server, ApiContext& ctx);  // key_routes.cc (keys, tokens, audit)
void RegisterReportRoutes(HttpServer& server, ApiContext& ctx);  // report_routes.cc
void RegisterInfluxRoutes(HttpServer& server,
                          ApiContext& ctx);  // influx_routes.cc (/write, /query, /ping)
void RegisterPromRoutes(HttpServer& server,
                        ApiContext& ctx);  // prom_routes.cc (/prometheus/api/v1/)

inline void RegisterRoutes(HttpServer& server, ApiContext& ctx) {
  RegisterWriteRoutes(server, ctx);
  RegisterRunRoutes(server, ctx);
  RegisterSeriesRoutes(server, ctx);
  RegisterRankRoutes(server, ctx);
  RegisterExportRoutes(server, ctx);
  RegisterRunDataRoutes(server, ctx);
  RegisterMediaRoutes(server, ctx);
  RegisterOpsRoutes(server, ctx);
  RegisterAlertRoutes(server, ctx);
  RegisterKeyRoutes(server, ctx);
  RegisterReportRoutes(server, ctx);
  RegisterInfluxRoutes(server, ctx);
  RegisterPromRoutes(server, ctx);
  server.WebSocket("/api/v1/live", ctx.live.Handler());
}

// A handler that reads the store (chunks, media, blobs, run search).
using StoreRead = void (*)(ApiContext&, HttpRequest&&, Responder);
// Registers `read` for GET (or a prefix, for `prefix`) on the query threads, never the I/O threads
// (RouteOptions::offload): a slow read holds up no other connection.
void RouteStoreRead(HttpServer& server, ApiContext& ctx, const std::string& path, StoreRead read);
void RouteStoreReadPrefix(HttpServer& server, ApiContext& ctx, const std::string& method,
                          const std::string& prefix, StoreRead read);

// Maps a Status to an HTTP status code.
int HttpStatusOf(const Status& status);

}  // namespace trainwatch::api
