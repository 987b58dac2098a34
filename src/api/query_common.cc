#include "api/query_common.h"

#include "api/json_writer.h"

namespace trainwatch::api {

void AppendPoint(std::string* out, const storage::Point& p) {
  out->push_back('[');
  AppendInt(out, p.step);
  out->push_back(',');
  AppendNumber(out, p.time, NonFinite::kStrings);
  out->push_back(',');
  AppendNumber(out, p.value, NonFinite::kStrings);
  out->push_back(']');
}

bool RequireRun(ApiContext& ctx, const HttpRequest& req, const Responder& respond,
                storage::RunInfo* info) {
  std::string run = req.Param("run");
  if (run.empty()) {
    respond(HttpResponse::Error(400, "query parameter 'run' is required"));
    return false;
  }
  Result<storage::RunInfo> found = ctx.querier.GetRun({req.Param("project", "default"), run});
  if (!found.ok()) {
    respond(HttpResponse::Error(HttpStatusOf(found.status()), found.status().message()));
    return false;
  }
  *info = std::move(found).value();
  return true;
}

namespace {

RouteOptions Offloaded() {
  RouteOptions options;
  options.offload = true;
  return options;
}

}  // namespace

void RouteStoreRead(HttpServer& server, ApiContext& ctx, const std::string& path, StoreRead read) {
  server.Route(
      "GET", path,
      [&ctx, read](HttpRequest&& req, Responder respond) {
        read(ctx, std::move(req), std::move(respond));
      },
      Offloaded());
}

void RouteStoreReadPrefix(HttpServer& server, ApiContext& ctx, const std::string& method,
                          const std::string& prefix, StoreRead read) {
  server.RoutePrefix(
      method, prefix,
      [&ctx, read](HttpRequest&& req, Responder respond) {
        read(ctx, std::move(req), std::move(respond));
      },
      Offloaded());
}

}  // namespace trainwatch::api
