#include "api/static_files.h"

#include <cctype>
#include <string>

#include "api/content_coding.h"
#include "common/strings.h"

namespace trainwatch::api {

namespace {

constexpr std::string_view kAssetsPrefix = "/assets/";
constexpr std::string_view kImmutable = "public, max-age=31536000, immutable";
constexpr std::string_view kRevalidate = "no-cache";

// Whether If-None-Match names `etag` (weak comparison, as RFC 9110 asks for If-None-Match).
bool EtagListed(std::string_view if_none_match, std::string_view etag) {
  bool found = false;
  ForEachHeaderElement(if_none_match, [&](std::string_view tag) {
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    found |= tag == "*" || tag == etag;
  });
  return found;
}

// The gzip copy's ETag: a representation with another content coding needs a validator of its own.
std::string GzipEtag(std::string_view etag) {
  std::string out(etag);
  if (out.size() >= 2 && out.back() == '"') {
    out.insert(out.size() - 1, "-gzip");
  } else {
    out += "-gzip";
  }
  return out;
}

}  // namespace

StaticFiles::StaticFiles(std::span<const web::EmbeddedAsset> assets) {
  for (const web::EmbeddedAsset& asset : assets) by_path_.emplace(asset.path, &asset);
  auto it = by_path_.find(std::string_view("/index.html"));
  if (it != by_path_.end()) index_ = it->second;
}

HttpResponse StaticFiles::Serve(const HttpRequest& request) const {
  auto it = by_path_.find(std::string_view(request.path == "/" ? "/index.html" : request.path));
  const web::EmbeddedAsset* asset = it == by_path_.end() ? nullptr : it->second;
  if (asset == nullptr) {
    if (request.path.starts_with(kAssetsPrefix) || index_ == nullptr) {
      return HttpResponse::Error(404, "no file at " + request.path);
    }
    asset = index_;
  }
  bool has_gzip = !asset->gzip.empty();
  bool gzip = has_gzip && AcceptsGzip(request.Header("accept-encoding"));
  std::string etag = gzip ? GzipEtag(asset->etag) : std::string(asset->etag);

  HttpResponse response;
  response.content_type = std::string(asset->content_type);
  response.headers.emplace_back(
      "Cache-Control",
      std::string(asset->path.starts_with(kAssetsPrefix) ? kImmutable : kRevalidate));
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (has_gzip) response.headers.emplace_back("Vary", "Accept-Encoding");

  std::string if_none_match = request.Header("if-none-match");
  if (!if_none_match.empty()) {
    // A cache may hold either coding; its validator stays good whichever this request would get.
    std::string other = !has_gzip ? "" : gzip ? std::string(asset->etag) : GzipEtag(asset->etag);
    const std::string* matched = EtagListed(if_none_match, etag)                      ? &etag
                                 : !other.empty() && EtagListed(if_none_match, other) ? &other
                                                                                      : nullptr;
    if (matched != nullptr) {
      response.status = 304;
      response.headers.emplace_back("ETag", *matched);
      return response;
    }
  }
  response.headers.emplace_back("ETag", etag);
  if (gzip) {
    response.headers.emplace_back("Content-Encoding", "gzip");
    response.body = std::string(asset->gzip);
  } else {
    response.body = std::string(asset->body);
  }
  return response;
}

void RegisterStaticFiles(HttpServer& server, std::shared_ptr<const StaticFiles> files) {
  server.Fallback([files = std::move(files)](HttpRequest&& request, Responder respond) {
    respond(files->Serve(request));
  });
}

}  // namespace trainwatch::api
