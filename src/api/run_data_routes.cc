// GET /api/v1/histograms and /api/v1/graph: what a run stores besides scalar series.
#include "api/json_writer.h"
#include "api/query_params.h"
#include "api/routes.h"

namespace trainwatch::api {
namespace {

constexpr int64_t kDefaultHistograms = 10'000;
constexpr int64_t kMaxHistograms = 100'000;

void AppendNumbers(std::string* out, const std::vector<double>& values) {
  out->push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out->push_back(',');
    AppendNumber(out, values[i], NonFinite::kStrings);
  }
  out->push_back(']');
}

// GET /api/v1/histograms?project=P&run=R&metric=M[&from=STEP][&to=STEP][&limit=N]
void HandleHistograms(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  std::string run = req.Param("run"), metric = req.Param("metric");
  if (run.empty() || metric.empty()) {
    return respond(HttpResponse::Error(400, "query parameters 'run' and 'metric' are required"));
  }
  storage::HistogramReadOptions options;
  if (std::string v = req.Param("from"); !v.empty() && !ParseInt(v, &options.from_step)) {
    return respond(HttpResponse::Error(400, "from must be an integer step"));
  }
  if (std::string v = req.Param("to"); !v.empty() && !ParseInt(v, &options.to_step)) {
    return respond(HttpResponse::Error(400, "to must be an integer step"));
  }
  int64_t limit = kDefaultHistograms;
  if (std::string v = req.Param("limit"); !v.empty()) {
    if (!ParseInt(v, &limit) || limit < 1 || limit > kMaxHistograms) {
      return respond(HttpResponse::Error(
          400, "limit must be an integer from 1 to " + std::to_string(kMaxHistograms)));
    }
  }
  options.limit = static_cast<size_t>(limit);
  std::vector<storage::Histogram> histograms;
  Status s = ctx.engine.ReadHistograms({req.Param("project", "default"), run, metric}, options,
                                       &histograms);
  if (!s.ok()) return respond(HttpResponse::Error(HttpStatusOf(s), s.message()));
  std::string body = "{\"histograms\":[";
  for (size_t i = 0; i < histograms.size(); ++i) {
    const storage::Histogram& h = histograms[i];
    if (i) body.push_back(',');
    body += "{\"step\":";
    AppendInt(&body, h.step);
    body += ",\"time\":";
    AppendNumber(&body, h.time, NonFinite::kStrings);
    body += ",\"edges\":";
    AppendNumbers(&body, h.edges);
    body += ",\"counts\":";
    AppendNumbers(&body, h.counts);
    body.push_back('}');
  }
  body += "]}\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

// GET /api/v1/graph?project=P&run=R: the stored JSON object as it was written.
void HandleGraph(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  std::string run = req.Param("run");
  if (run.empty()) return respond(HttpResponse::Error(400, "query parameter 'run' is required"));
  Result<std::string> graph = ctx.engine.ReadGraph(req.Param("project", "default"), run);
  if (!graph.ok())
    return respond(HttpResponse::Error(HttpStatusOf(graph.status()), graph.status().message()));
  respond(HttpResponse::Json(200, std::move(graph).value()));
}

}  // namespace

void RegisterRunDataRoutes(HttpServer& server, ApiContext& ctx) {
  RouteStoreRead(server, ctx, "/api/v1/histograms", HandleHistograms);
  RouteStoreRead(server, ctx, "/api/v1/graph", HandleGraph);
}

}  // namespace trainwatch::api
