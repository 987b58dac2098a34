// Content codings of answers: whether a client accepts gzip (Accept-Encoding, RFC 9110 12.5.3),
// and gzip for large text answers (a rank matrix of 1,024 ranks is tens of megabytes of JSON
// numbers; compressed it is a fraction of that on a network). Static files carry gzip copies made
// at build time (static_files.h); the API's answers are compressed as they leave their handler.
#pragma once

#include <string_view>

#include "api/http_server.h"
#include "common/strings.h"

namespace trainwatch::api {

// Calls fn(element) for each comma-separated, trimmed, non-empty element of a header value.
template <class Fn>
void ForEachHeaderElement(std::string_view value, Fn fn) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view element = TrimBlanks(value.substr(0, comma));
    value.remove_prefix(comma == std::string_view::npos ? value.size() : comma + 1);
    if (!element.empty()) fn(element);
  }
}

// Accept-Encoding allows gzip: named with q > 0, or not named and `*` with q > 0.
bool AcceptsGzip(std::string_view accept_encoding);

// Answers at least this large are worth compressing.
inline constexpr size_t kGzipMinBytes = 8 * 1024;

// Compresses `response`'s body with gzip (fast level) when it is a complete 200 answer of text
// (JSON, NDJSON, CSV, HTML, plain text) of at least kGzipMinBytes with no content coding and no
// ETag yet (a validator names one representation), and says so in its headers (Content-Encoding,
// Vary). Streamed answers are left as they are. Call it
// only for a client that accepts gzip, off the I/O threads (a large answer takes milliseconds).
void GzipAnswer(HttpResponse* response);

}  // namespace trainwatch::api
