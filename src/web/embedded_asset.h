// EmbeddedAsset: one file compiled into the binary (the dashboard's build output), as
// cmake/embed_assets.py writes it. Plain read-only data with static storage duration.
#pragma once

#include <string_view>

namespace trainwatch::web {

struct EmbeddedAsset {
  std::string_view path;          // URL path: "/index.html", "/assets/index-3f2a1b9c.js"
  std::string_view content_type;  // from the file extension: "text/javascript; charset=utf-8"
  std::string_view etag;          // strong validator of `body`, quoted: "\"5d41402abc4b2a76\""
  std::string_view body;
  std::string_view gzip;  // `body` gzip-compressed; empty when that would not be smaller
};

}  // namespace trainwatch::web
