// GET /api/v1/report: a run's training report (report/report.h, docs/reports.md) as one
// self-contained HTML file, or printed to PDF by headless Chromium (report/pdf.h).
// GET /api/v1/report/stored and /api/v1/report/stored/info: the report stored when the run ended
// (report/report_store.h, docs/reports.md "Automatic reports") and what it is about.
#include <cctype>

#include "api/routes.h"
#include "report/pdf.h"
#include "report/report.h"
#include "report/report_html.h"
#include "report/report_store.h"

namespace trainwatch::api {
namespace {

// The run id as a file name: letters, digits, '.', '-' and '_' kept, the rest '_'.
std::string FileName(const std::string& run, const char* ext) {
  std::string name = "report-";
  for (char c : run.substr(0, 100)) {
    const bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
    name.push_back(keep ? c : '_');
  }
  return name + "." + ext;
}

void HandleReport(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  report::ReportRequest request;
  request.project = req.Param("project", "default");
  request.run = req.Param("run");
  if (request.run.empty()) {
    return respond(HttpResponse::Error(400, "query parameter 'run' is required"));
  }
  for (const std::string& other : req.Params("compare")) {
    if (other.empty()) return respond(HttpResponse::Error(400, "compare: empty run id"));
    request.compare.push_back(other);
  }
  if (request.compare.size() > 7) {
    return respond(HttpResponse::Error(
        400, "compare: at most 7 runs, not " + std::to_string(request.compare.size())));
  }
  const std::string format = req.Param("format", "html");
  if (format != "html" && format != "pdf") {
    return respond(
        HttpResponse::Error(400, "format: must be 'html' or 'pdf', not '" + format + "'"));
  }
  std::optional<std::string> chromium;
  if (format == "pdf") {
    chromium = report::FindChromium();
    if (!chromium) {
      return respond(HttpResponse::Error(
          501,
          "format=pdf: this server has no Chromium to print with (install Debian's chromium, "
          "or set TRAINWATCH_CHROMIUM); ask for format=html and print that"));
    }
  }
  request.now = ctx.clock.NowUnixSeconds();
  request.generator = "trainwatch " + ctx.server.version;

  Result<report::Report> collected = report::CollectReport(ctx.querier, ctx.alerts, request);
  if (!collected.ok()) {
    return respond(
        HttpResponse::Error(HttpStatusOf(collected.status()), collected.status().message()));
  }
  std::string html = report::RenderReportHtml(*collected);
  HttpResponse response;
  response.status = 200;
  if (format == "html") {
    response.content_type = "text/html; charset=utf-8";
    response.body = std::move(html);
    response.headers.emplace_back("Content-Disposition",
                                  "inline; filename=\"" + FileName(request.run, "html") + "\"");
  } else {
    Result<std::string> pdf = report::PrintPdf(*chromium, html);
    if (!pdf.ok()) return respond(HttpResponse::Error(503, pdf.status().message()));
    response.content_type = "application/pdf";
    response.body = std::move(pdf).value();
    response.headers.emplace_back("Content-Disposition",
                                  "attachment; filename=\"" + FileName(request.run, "pdf") + "\"");
  }
  // The report reads the live state of a run: never reuse an old one.
  response.headers.emplace_back("Cache-Control", "no-store");
  respond(std::move(response));
}

// The run of the request's `project` and `run` parameters, or the error to answer with.
Result<storage::RunKey> StoredRun(ApiContext& ctx, const HttpRequest& req) {
  storage::RunKey key{req.Param("project", "default"), req.Param("run")};
  if (key.run.empty()) return Status::InvalidArgument("query parameter 'run' is required");
  // A deleted run's report is gone with it, whatever is left on disk.
  TW_RETURN_IF_ERROR(ctx.querier.GetRun(key).status());
  return key;
}

Result<report::StoredReportInfo> StoredInfo(ApiContext& ctx, const storage::RunKey& key) {
  if (ctx.report_store == nullptr) {
    return Status::NotFound("no stored report for run '" + key.run + "' in project '" +
                            key.project + "'");
  }
  return ctx.report_store->Info(key.project, key.run);
}

void HandleStoredReport(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  Result<storage::RunKey> key = StoredRun(ctx, req);
  Result<report::StoredReportInfo> info =
      key.ok() ? StoredInfo(ctx, *key) : Result<report::StoredReportInfo>(key.status());
  Result<std::string> html =
      info.ok() ? ctx.report_store->Html(info->project, info->run) : info.status();
  if (!html.ok()) {
    return respond(HttpResponse::Error(HttpStatusOf(html.status()), html.status().message()));
  }
  HttpResponse response;
  response.status = 200;
  response.content_type = "text/html; charset=utf-8";
  response.body = std::move(html).value();
  response.headers.emplace_back("Content-Disposition",
                                "inline; filename=\"" + FileName(info->run, "html") + "\"");
  // Replaced when the run resumes and ends again.
  response.headers.emplace_back("Cache-Control", "no-cache");
  respond(std::move(response));
}

// Whether the run has a stored report, and what it is about: 200 either way for a run that exists
// (the dashboard asks for every run it shows).
void HandleStoredReportInfo(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  Result<storage::RunKey> key = StoredRun(ctx, req);
  if (!key.ok()) {
    return respond(HttpResponse::Error(HttpStatusOf(key.status()), key.status().message()));
  }
  nlohmann::json body = {{"project", key->project}, {"run", key->run}, {"stored", false}};
  Result<report::StoredReportInfo> info = StoredInfo(ctx, *key);
  if (info.ok()) {
    body["stored"] = true;
    body["status"] = info->status;
    body["run_end_time"] = info->run_end_time;
    body["generated_at"] = info->generated_at;
    body["bytes"] = info->bytes;
  } else if (info.status().code() != StatusCode::kNotFound) {
    return respond(HttpResponse::Error(HttpStatusOf(info.status()), info.status().message()));
  }
  respond(HttpResponse::Json(200, body.dump() + "\n"));
}

}  // namespace

void RegisterReportRoutes(HttpServer& server, ApiContext& ctx) {
  RouteStoreRead(server, ctx, "/api/v1/report", HandleReport);
  RouteStoreRead(server, ctx, "/api/v1/report/stored", HandleStoredReport);
  RouteStoreRead(server, ctx, "/api/v1/report/stored/info", HandleStoredReportInfo);
}

}  // namespace trainwatch::api
