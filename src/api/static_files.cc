#include "api/static_files.h"

#include <cctype>
#include <string>

#include "common/strings.h"

namespace trainwatch::api {

namespace {

constexpr std::string_view kAssetsPrefix = "/assets/";
constexpr std::string_view kImmutable = "public, max-age=31536000, immutable";
constexpr std::string_view kRevalidate = "no-cache";

// Calls fn(element) for each comma-separated, trimmed, non-empty element of a header value.
template <class Fn>
void ForEachElement(std::string_view value, Fn fn) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view element = TrimBlanks(value.substr(0, comma));
    value.remove_prefix(comma == std::string_view::npos ? value.size() : comma + 1);
    if (!element.empty()) fn(element);
  }
}

// Whether a coding's parameters (";q=0.5") leave it acceptable: only q=0 (0, 0.0, ..., 0.000)
// refuses.
bool Acceptable(std::string_view params) {
  bool acceptable = true;
  while (!params.empty()) {
    size_t semi = params.find(';');
    std::string_view param = TrimBlanks(params.substr(0, semi));
    params.remove_prefix(semi == std::string_view::npos ? params.size() : semi + 1);
    if (param.size() < 2 || (param[0] != 'q' && param[0] != 'Q') || param[1] != '=') continue;
    std::string_view value = TrimBlanks(param.substr(2));
    acceptable = value.empty() || value[0] != '0' ||
                 value.find_first_not_of("0.", 1) != std::string_view::npos;
  }
  return acceptable;
}

// Accept-Encoding allows gzip: named with q > 0, or not named and `*` with q > 0.
bool AcceptsGzip(std::string_view accept_encoding) {
  int gzip = -1, star = -1;  // -1: not named
  ForEachElement(accept_encoding, [&](std::string_view element) {
    size_t semi = element.find(';');
    std::string_view coding = TrimBlanks(element.substr(0, semi));
    std::string_view params = semi == std::string_view::npos ? "" : element.substr(semi + 1);
    if (EqualsIgnoreCase(coding, "gzip") || EqualsIgnoreCase(coding, "x-gzip")) {
      gzip = Acceptable(params);
    } else if (coding == "*") {
      star = Acceptable(params);
    }
  });
  return gzip >= 0 ? gzip == 1 : star == 1;
}

// Whether If-None-Match names `etag` (weak comparison, as RFC 9110 asks for If-None-Match).
bool EtagListed(std::string_view if_none_match, std::string_view etag) {
  bool found = false;
  ForEachElement(if_none_match, [&](std::string_view tag) {
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
