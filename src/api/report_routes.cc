// GET /api/v1/report: a run's training report (report/report.h, docs/reports.md) as one
// self-contained HTML file, or printed to PDF by headless Chromium (report/pdf.h).
#include <cctype>

#include "api/routes.h"
#include "report/pdf.h"
#include "report/report.h"
#include "report/report_html.h"

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

}  // namespace

void RegisterReportRoutes(HttpServer& server, ApiContext& ctx) {
  RouteStoreRead(server, ctx, "/api/v1/report", HandleReport);
}

}  // namespace trainwatch::api
