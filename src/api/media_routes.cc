// GET /api/v1/images, /api/v1/texts and /api/v1/blobs/<sha256>: a run's images and texts, and the
// image bytes themselves, content-addressed (so cacheable for good).
#include <algorithm>
#include <optional>

#include "api/json_writer.h"
#include "api/query_params.h"
#include "api/routes.h"
#include "common/sha256.h"
#include "common/strings.h"

namespace trainwatch::api {
namespace {

constexpr int64_t kDefaultEntries = 10'000;
constexpr int64_t kMaxEntries = 100'000;
constexpr char kBlobPrefix[] = "/api/v1/blobs/";

// Reads run, name, from, to and limit; an error response when one is malformed.
std::optional<HttpResponse> ParseMediaQuery(const HttpRequest& req,
                                            storage::MediaReadOptions* options) {
  if (req.Param("run").empty()) {
    return HttpResponse::Error(400, "query parameter 'run' is required");
  }
  options->name = req.Param("name");
  if (std::string v = req.Param("from"); !v.empty() && !ParseInt(v, &options->from_step)) {
    return HttpResponse::Error(400, "from must be an integer step");
  }
  if (std::string v = req.Param("to"); !v.empty() && !ParseInt(v, &options->to_step)) {
    return HttpResponse::Error(400, "to must be an integer step");
  }
  int64_t limit = kDefaultEntries;
  if (std::string v = req.Param("limit"); !v.empty()) {
    if (!ParseInt(v, &limit) || limit < 1 || limit > kMaxEntries) {
      return HttpResponse::Error(
          400, "limit must be an integer from 1 to " + std::to_string(kMaxEntries));
    }
  }
  options->limit = static_cast<size_t>(limit);
  return std::nullopt;
}

// GET /api/v1/images?project=P&run=R[&name=TAG][&from=STEP][&to=STEP][&limit=N]
void HandleImages(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  storage::MediaReadOptions options;
  if (auto error = ParseMediaQuery(req, &options)) return respond(std::move(*error));
  std::vector<storage::ImageEntry> images;
  Status s =
      ctx.engine.ReadImages(req.Param("project", "default"), req.Param("run"), options, &images);
  if (!s.ok()) return respond(HttpResponse::Error(HttpStatusOf(s), s.message()));
  std::string body = "[";
  for (size_t i = 0; i < images.size(); ++i) {
    const storage::ImageEntry& e = images[i];
    const std::string sha256 = LowerHex(e.sha256);
    if (i) body.push_back(',');
    body += "{\"name\":";
    AppendString(&body, e.name);
    body += ",\"step\":";
    AppendInt(&body, e.step);
    body += ",\"index\":" + std::to_string(e.index) + ",\"time\":";
    AppendNumber(&body, e.time, NonFinite::kStrings);
    body += ",\"caption\":";
    AppendString(&body, e.caption);
    body += ",\"sha256\":\"" + sha256 + "\",\"mime\":\"" + std::string(MimeType(e.format)) +
            "\",\"width\":" + std::to_string(e.width) + ",\"height\":" + std::to_string(e.height) +
            ",\"size\":" + std::to_string(e.size) + ",\"url\":\"" + kBlobPrefix + sha256 + "\"}";
  }
  body += "]\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

// GET /api/v1/texts?project=P&run=R[&name=TAG][&from=STEP][&to=STEP][&limit=N]
void HandleTexts(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  storage::MediaReadOptions options;
  if (auto error = ParseMediaQuery(req, &options)) return respond(std::move(*error));
  std::vector<storage::TextEntry> texts;
  Status s =
      ctx.engine.ReadTexts(req.Param("project", "default"), req.Param("run"), options, &texts);
  if (!s.ok()) return respond(HttpResponse::Error(HttpStatusOf(s), s.message()));
  std::string body = "[";
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i) body.push_back(',');
    body += "{\"name\":";
    AppendString(&body, texts[i].name);
    body += ",\"step\":";
    AppendInt(&body, texts[i].step);
    body += ",\"time\":";
    AppendNumber(&body, texts[i].time, NonFinite::kStrings);
    body += ",\"value\":";
    AppendString(&body, texts[i].value);
    body.push_back('}');
  }
  body += "]\n";
  respond(HttpResponse::Json(200, std::move(body)));
}

// True if an If-None-Match header lists `etag` (or is "*"); weak tags compare by their value.
bool MatchesIfNoneMatch(std::string_view header, std::string_view etag) {
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view tag = header.substr(0, comma);
    header.remove_prefix(comma == std::string_view::npos ? header.size() : comma + 1);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) tag.remove_prefix(1);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
  }
  return false;
}

// GET|HEAD /api/v1/blobs/<sha256>: the bytes of a stored image. The address is the content, so the
// answer never changes: browsers may keep it for a year without asking again.
void HandleBlob(ApiContext& ctx, HttpRequest&& req, Responder respond) {
  std::string sha256;
  std::string_view hex = std::string_view(req.path).substr(sizeof kBlobPrefix - 1);
  if (!ParseSha256Hex(hex, &sha256)) {
    return respond(HttpResponse::Error(
        400, "'" + std::string(hex.substr(0, 80)) + "' is not a SHA-256: expected 64 hex digits"));
  }
  if (!req.principal.projects.empty()) {
    // Blobs are shared by content across projects: a project-bound key reads one only through an
    // image of a run it sees (admission checked `project=` against the key).
    const std::string project = req.Param("project", "default"), run = req.Param("run");
    if (run.empty()) {
      return respond(
          HttpResponse::Error(400,
                              "a project-bound key reads a blob through its run: add run=... "
                              "(and project=...)"));
    }
    std::vector<storage::ImageEntry> images;
    Status s = ctx.engine.ReadImages(project, run, {}, &images);
    if (!s.ok() && s.code() != StatusCode::kNotFound)
      return respond(HttpResponse::Error(HttpStatusOf(s), s.message()));
    bool referenced = std::any_of(images.begin(), images.end(),
                                  [&](const storage::ImageEntry& e) { return e.sha256 == sha256; });
    if (!referenced) {
      return respond(HttpResponse::Error(
          404, "no image of run '" + run + "' in project '" + project + "' has this content"));
    }
  }
  const std::string etag = "\"" + LowerHex(sha256) + "\"";
  HttpResponse response;
  response.headers = {{"ETag", etag},
                      {"Cache-Control", "private, max-age=31536000, immutable"},
                      {"X-Content-Type-Options", "nosniff"}};
  if (MatchesIfNoneMatch(req.Header("if-none-match"), etag)) {
    // Still only for a blob that exists: a deleted image must not stay "fresh" in a cache.
    Result<bool> exists = ctx.engine.HasBlob(sha256);
    if (!exists.ok()) return respond(HttpResponse::Error(500, exists.status().message()));
    if (*exists) {
      response.status = 304;
      response.content_type.clear();  // a 304 must not relabel the cached bytes
      return respond(std::move(response));
    }
  }
  Result<std::string> bytes = ctx.engine.ReadBlob(sha256);
  if (!bytes.ok()) {
    return respond(HttpResponse::Error(HttpStatusOf(bytes.status()), bytes.status().message()));
  }
  Result<ImageInfo> info = InspectImage(*bytes);
  response.content_type =
      info.ok() ? std::string(MimeType(info->format)) : "application/octet-stream";
  response.body = std::move(bytes).value();
  respond(std::move(response));
}

}  // namespace

void RegisterMediaRoutes(HttpServer& server, ApiContext& ctx) {
  RouteStoreRead(server, ctx, "/api/v1/images", HandleImages);
  RouteStoreRead(server, ctx, "/api/v1/texts", HandleTexts);
  for (const char* method : {"GET", "HEAD"})
    RouteStoreReadPrefix(server, ctx, method, kBlobPrefix, HandleBlob);
}

}  // namespace trainwatch::api
