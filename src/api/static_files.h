// StaticFiles: serves the embedded web dashboard (docs/design/dashboard.md, "Server side").
//
// `/` and every path that is not a file get /index.html with `Cache-Control: no-cache` (the app
// uses a hash router, so any deep link loads the app), except that a missing /assets/... file is a
// 404: an HTML page in place of a script only hides the error. Files under /assets/ carry content
// hashes in their names and get `Cache-Control: public, max-age=31536000, immutable`. Every answer
// has the file's ETag; a matching If-None-Match gets 304. A client that accepts gzip gets the
// stored gzip copy when there is one (`Content-Encoding: gzip`, its own ETag, `Vary:
// Accept-Encoding`).
//
// Immutable after construction; thread-safe.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string_view>

#include "api/http_server.h"
#include "web/embedded_asset.h"

namespace trainwatch::api {

class StaticFiles {
 public:
  // Borrows `assets` (the generated table lives for the whole program).
  explicit StaticFiles(std::span<const web::EmbeddedAsset> assets);

  // The answer to a GET or HEAD of `request.path` (the server drops the body for HEAD).
  HttpResponse Serve(const HttpRequest& request) const;

 private:
  std::map<std::string_view, const web::EmbeddedAsset*, std::less<>> by_path_;
  const web::EmbeddedAsset* index_ = nullptr;  // null when the table has no /index.html
};

// Makes `files` the server's fallback: GET/HEAD of any path outside /api/ that has no route, with
// no API key needed.
void RegisterStaticFiles(HttpServer& server, std::shared_ptr<const StaticFiles> files);

}  // namespace trainwatch::api
