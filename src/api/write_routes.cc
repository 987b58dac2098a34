// POST /api/v1/write, POST /api/v1/runs/update and POST /api/v1/runs/rewind.
#include <limits>
#include <nlohmann/json.hpp>

#include "api/json_writer.h"
#include "api/routes.h"
#include "common/json.h"

namespace trainwatch::api {
namespace {

constexpr size_t kMaxErrorsReported = 100;

HttpResponse RenderIngestResult(const ingest::IngestResult& r) {
  if (!r.status.ok()) {
    HttpResponse refused = HttpResponse::Error(HttpStatusOf(r.status), r.status.ToString());
    // Unavailable (shutting down; in a cluster, NATS unreachable): send the same batch again
    // later; the SDK spools it meanwhile.
    if (refused.status == 503) refused.headers.emplace_back("Retry-After", "1");
    return refused;
  }
  std::string body = "{\"lines_accepted\":" + std::to_string(r.lines_accepted) +
                     ",\"lines_rejected\":" + std::to_string(r.lines_rejected) +
                     ",\"points_accepted\":" + std::to_string(r.points_accepted) +
                     ",\"points_unchanged\":" + std::to_string(r.points_unchanged) +
                     ",\"points_rejected\":" + std::to_string(r.points_rejected) +
                     ",\"duplicate_batch\":" + (r.duplicate_batch ? "true" : "false") +
                     ",\"errors\":[";
  for (size_t i = 0; i < r.errors.size() && i < kMaxErrorsReported; ++i) {
    if (i) body.push_back(',');
    body += "{\"line\":" + std::to_string(r.errors[i].line) + ",\"error\":";
    AppendString(&body, r.errors[i].message);
    body.push_back('}');
  }
  body += "],\"errors_omitted\":" +
          std::to_string(r.errors.size() > kMaxErrorsReported ? r.errors.size() - kMaxErrorsReported
                                                              : 0) +
          "}\n";
  // Partial success is a 400 that still reports what was stored, as InfluxDB does.
  return HttpResponse::Json(r.errors.empty() ? 200 : 400, std::move(body));
}

void HandleWrite(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  std::string type = req.Header("content-type");
  auto done = [respond](ingest::IngestResult result) { respond(RenderIngestResult(result)); };
  if (type.starts_with("application/x-protobuf") || type.starts_with("application/protobuf")) {
    v1::WriteRequest request;
    if (!request.ParseFromString(req.body)) {
      respond(HttpResponse::Error(400, "body is not a valid trainwatch.v1.WriteRequest protobuf"));
      return;
    }
    ctx.ingestor.WriteProto(std::move(request), std::move(done), req.principal.projects);
    return;
  }
  ctx.ingestor.WriteJsonLines(req.body, std::move(done), req.principal.projects);
}

// Builds a metadata-only write from the JSON body of /api/v1/runs/update.
Status MetadataFromJson(const std::string& body, v1::RunMetadata* meta) {
  TW_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(body));
  if (!j.is_object()) return Status::InvalidArgument("body must be a JSON object");
  try {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      if (key == "name")
        meta->set_name(it->get<std::string>());
      else if (key == "group")
        meta->set_group(it->get<std::string>());
      else if (key == "host")
        meta->set_host(it->get<std::string>());
      else if (key == "status")
        meta->set_status(it->get<std::string>());
      else if (key == "start_time")
        meta->set_start_time(it->get<double>());
      else if (key == "end_time")
        meta->set_end_time(it->get<double>());
      else if (key == "replace_tags")
        meta->set_replace_tags(it->get<bool>());
      else if (key == "tags") {
        for (const auto& t : it->get<std::vector<std::string>>()) meta->add_tags(t);
      } else if (key == "config") {
        if (!it->is_object()) return Status::InvalidArgument("field 'config': expected an object");
        meta->set_config_json(it->dump());
      } else {
        return Status::InvalidArgument("unknown field '" + key + "'");
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("wrong type: ") + e.what());
  }
  return Status::Ok();
}

void HandleRunUpdate(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  std::string run = req.Param("run");
  if (run.empty()) {
    respond(HttpResponse::Error(400, "query parameter 'run' is required"));
    return;
  }
  v1::WriteRequest request;
  v1::RunBatch* batch = request.add_runs();
  batch->set_project(req.Param("project", "default"));
  batch->set_run(run);
  Status s = MetadataFromJson(req.body, batch->mutable_metadata());
  if (!s.ok()) {
    respond(HttpResponse::Error(400, s.message()));
    return;
  }
  ctx.ingestor.WriteProto(std::move(request), [respond](ingest::IngestResult result) {
    respond(RenderIngestResult(result));
  });
}

// The step of a /api/v1/runs/rewind body: {"step": S}, S an integer >= 0.
Result<int64_t> RewindStepFromJson(const std::string& body) {
  TW_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(body));
  if (!j.is_object()) return Status::InvalidArgument("body must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "step") return Status::InvalidArgument("unknown field '" + it.key() + "'");
  }
  auto step = j.find("step");
  if (step == j.end()) return Status::InvalidArgument("field 'step' is required");
  if (step->is_number_unsigned() &&
      step->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(step->get<uint64_t>());
  }
  if (step->is_number_integer() && step->get<int64_t>() >= 0) return step->get<int64_t>();
  return Status::InvalidArgument("field 'step' must be an integer from 0 to 2^63-1, not " +
                                 step->dump());
}

// A rewind is a metadata-only write (RunMetadata.rewind_step): logged, so durable before the
// answer, and applied in order with the run's writes before and after it.
void HandleRunRewind(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  std::string project = req.Param("project", "default");
  std::string run = req.Param("run");
  if (run.empty()) {
    respond(HttpResponse::Error(400, "query parameter 'run' is required"));
    return;
  }
  Result<int64_t> step = RewindStepFromJson(req.body);
  if (!step.ok()) {
    respond(HttpResponse::Error(400, step.status().message()));
    return;
  }
  // Refused rather than creating an empty run. (A run deleted between this check and the write
  // comes back empty.)
  if (!ctx.engine.GetRun(project, run)) {
    respond(HttpResponse::Error(404, "no run '" + run + "' in project '" + project + "'"));
    return;
  }
  v1::WriteRequest request;
  v1::RunBatch* batch = request.add_runs();
  batch->set_project(project);
  batch->set_run(run);
  batch->mutable_metadata()->set_rewind_step(*step);
  ctx.ingestor.WriteProto(
      std::move(request), [respond, project, run, step = *step](ingest::IngestResult result) {
        if (!result.status.ok()) {
          respond(HttpResponse::Error(HttpStatusOf(result.status), result.status.ToString()));
          return;
        }
        if (!result.errors.empty()) {  // validated above; the ingestor's word is final
          respond(HttpResponse::Error(400, result.errors.front().message));
          return;
        }
        std::string body = "{\"project\":";
        AppendString(&body, project);
        body += ",\"run\":";
        AppendString(&body, run);
        body += ",\"step\":" + std::to_string(step) +
                ",\"series_rewound\":" + std::to_string(result.series_rewound) + "}\n";
        respond(HttpResponse::Json(200, std::move(body)));
      });
}

}  // namespace

int HttpStatusOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kResourceExhausted:
      return 507;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    default:
      return 500;
  }
}

void RegisterWriteRoutes(HttpServer& server, ApiContext& ctx) {
  RouteOptions write;  // write scope, the default for a POST
  write.body_types = {"application/x-ndjson", "application/jsonl", "application/json",
                      "application/x-protobuf", "application/protobuf"};
  write.projects_in_body = true;
  server.Route(
      "POST", "/api/v1/write",
      [&ctx](HttpRequest&& req, Responder respond) {
        HandleWrite(ctx, std::move(req), std::move(respond));
      },
      write);
  server.Route("POST", "/api/v1/runs/update", [&ctx](HttpRequest&& req, Responder respond) {
    HandleRunUpdate(ctx, std::move(req), std::move(respond));
  });
  server.Route("POST", "/api/v1/runs/rewind", [&ctx](HttpRequest&& req, Responder respond) {
    HandleRunRewind(ctx, std::move(req), std::move(respond));
  });
}

}  // namespace trainwatch::api
