// The few HTTP calls `import`, `watch` and `export` make beside the SDK's own transport: run
// metadata updates, run rewinds and the read API. libcurl; one connection kept alive. Like the SDK,
// it never sends an API key in clear text to another machine (trainwatch/key_policy.h): a key
// and an http:// URL whose host is not loopback are refused before connecting.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/strings.h"  // UrlEncode, for the query strings built here and by the commands
#include "trainwatch/client.h"

namespace trainwatch::tools {

struct HttpReply {
  long status = 0;
  std::string body;
};

// Not thread-safe.
class HttpClient {
 public:
  // `server`: "http://host:port" or "https://host:port" (a trailing slash is fine); `api_key` may
  // be empty. `tls_ca_file`: PEM CA bundle that signed an https:// server's certificate; empty:
  // $TRAINWATCH_TLS_CA, else the system's CAs.
  HttpClient(std::string server, std::string api_key, std::string tls_ca_file = "");
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // `path` begins with '/' and holds the query string. Unavailable when no reply came (naming
  // the URL and curl's reason); any HTTP status is a reply.
  Result<HttpReply> Get(std::string_view path, double timeout_seconds = 120);
  Result<HttpReply> Post(std::string_view path, std::string_view body, double timeout_seconds = 60,
                         std::string_view content_type = "application/json");

  const std::string& server() const { return server_; }

 private:
  Result<HttpReply> Perform(std::string_view path, const std::string* body, double timeout_seconds,
                            std::string_view content_type);

  std::string server_;
  std::string api_key_;
  std::string auth_header_;
  std::string tls_ca_file_;
  void* curl_;  // CURL*, kept out of this header
};

// A SessionLog START at `step` (TensorBoard's purge): waits until `client` has everything logged
// so far acknowledged (at most `flush_timeout` seconds), then has every series of the run start a
// new timeline at `step` (POST /api/v1/runs/rewind) and waits for the server's answer, so the
// rewind falls between the points sent before and after. A run the server does not know has
// nothing to rewind: Ok. Unavailable when the data was not acknowledged in time or no answer came;
// the server's reason for any other answer.
Status RewindRunAfterFlush(Client& client, HttpClient& http, const std::string& project,
                           const std::string& run, int64_t step, double flush_timeout);

// Steps that went backwards (TensorBoard's per-tag purge): as RewindRunAfterFlush, but only the
// named series of the run start a new timeline at `step` — a metadata-only protobuf write
// (POST /api/v1/write, RunMetadata.rewind_step and rewind_series), through the server's log.
Status RewindSeriesAfterFlush(Client& client, HttpClient& http, const std::string& project,
                              const std::string& run, int64_t step,
                              const std::vector<std::string>& series, double flush_timeout);

}  // namespace trainwatch::tools
