// HttpServer: HTTP/1.1 and WebSocket on Boost.Beast, behind a small interface of our own so that the
// rest of the code base never includes Beast (it is slow to compile). Routes are exact paths; one
// fallback handler may serve every other GET/HEAD path outside /api/ (the dashboard's static files).
//
// Handlers run on the server's I/O threads and must not block; a handler answers through the
// Responder, at once or later from any thread. Oversized bodies, malformed requests, slow clients
// (timeouts) and too many connections get a clear HTTP error, and never disturb other connections.
// Thread-safe after Start().
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/tls_context.h"
#include "auth/audit_log.h"
#include "auth/key_store.h"
#include "auth/token_issuer.h"
#include "common/cidr.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "common/status.h"

namespace trainwatch::api {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string, percent-decoded
  std::multimap<std::string, std::string> query;  // decoded parameters
  std::map<std::string, std::string> headers;     // lower-case names
  std::string body;
  std::string remote;
  // Whose key the request carried (scope and projects checked against the route already); an
  // admin without a name when the server has no keys.
  auth::Principal principal;

  // The first value of a query parameter, or `fallback`.
  std::string Param(const std::string& name, const std::string& fallback = "") const;
  std::vector<std::string> Params(const std::string& name) const;
  std::string Header(const std::string& lower_name) const;
};

// What a streamed body's producer says after writing a piece.
enum class StreamStep {
  kMore,    // call again for the next piece
  kDone,    // that was the last piece
  kFailed,  // the body cannot be finished: the connection is closed without the terminating chunk,
            // so that the client sees an incomplete answer rather than a short one
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";  // empty: no Content-Type header (a 304)
  std::string body;
  // A body too large to hold at once (an export): when set, `body` is ignored and the answer is
  // sent with chunked encoding, piece by piece, each piece produced on a query thread only once
  // the previous one is on its way (the client's reading speed paces the producer). The producer
  // appends its next piece to the (empty) string it is given.
  std::function<StreamStep(std::string* piece)> stream;
  std::vector<std::pair<std::string, std::string>> headers;
  // What the request acted on, for the audit log, when the query parameters do not say it (a
  // key's name, a silence's id).
  std::string audit_target;

  static HttpResponse Json(int status, std::string body);
  // {"error": message} with the given status.
  static HttpResponse Error(int status, const std::string& message);
};

// Answers a request exactly once; callable from any thread.
using Responder = std::function<void(HttpResponse)>;
using HttpHandler = std::function<void(HttpRequest&&, Responder)>;

// One WebSocket connection, as handlers see it. Thread-safe.
class WebSocketPeer {
 public:
  virtual ~WebSocketPeer() = default;
  // Queues a text message. A peer that falls too far behind is disconnected rather than allowed to
  // hold unbounded memory.
  virtual void Send(std::string text) = 0;
  virtual void Close() = 0;
  virtual uint64_t id() const = 0;
  // Whose key opened the connection.
  virtual const auth::Principal& principal() const = 0;
};

struct WebSocketHandler {
  std::function<void(std::shared_ptr<WebSocketPeer>)> on_open;
  std::function<void(const std::shared_ptr<WebSocketPeer>&, std::string_view)> on_message;
  std::function<void(const std::shared_ptr<WebSocketPeer>&)> on_close;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0 picks a free port
  int threads = 2;
  // Threads for the routes marked `offload` and for producing streamed bodies.
  int query_threads = 2;
  uint64_t max_body_bytes = 64ull << 20;
  // Connection caps. A new connection over a cap closes the oldest connection (of its address, or
  // of all) that is only waiting for a request header — what a slow-header flood is made of, and
  // an idle keep-alive a client reopens at no cost — so that /healthz and clients that send whole
  // requests are still served during a flood. With none to close, the newcomer gets a 503.
  int max_connections = 1024;
  int max_connections_per_address = 256;
  // A request header must arrive within header_timeout_seconds of the connection (or of the
  // previous answer); its body within read_timeout_seconds of the header.
  int header_timeout_seconds = 10;
  int read_timeout_seconds = 60;
  size_t max_websocket_queue_bytes = 16 << 20;
  // When it holds any key, every request but GET /healthz and those the fallback serves must carry
  // `Authorization: Bearer <key>` (where a browser cannot send a header — a WebSocket, an <img> —
  // a GET, HEAD or upgrade may carry a short-lived `token` query parameter from `tokens` instead;
  // a `key` query parameter is refused), of the route's scope, naming (`project=`) a project the
  // key sees. Checked on the request header, before any body byte is read or `100 Continue` sent.
  // Null: no keys.
  const auth::KeyStore* keys = nullptr;
  // Checks `?token=`; null: no tokens are accepted.
  const auth::TokenIssuer* tokens = nullptr;
  // Every state-changing request and every refused key is recorded here, and answered once its
  // entry is durable. Null: no audit.
  auth::AuditLog* audit = nullptr;
  // Browser protections (docs/security.md). The Host header must name this server: an IP address,
  // localhost, this machine's host name, or one of allowed_hosts ("name", "*.domain", or "*" for
  // any) — a foreign name is DNS rebinding. State-changing requests and WebSocket upgrades that
  // carry an Origin must come from this server's own origin or one of cors_origins
  // ("https://app.example"), which also get CORS headers.
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> cors_origins;
  // Client addresses allowed to connect at all; empty: any. Others are closed at once.
  CidrList allow_from;
  // HTTPS and WSS only, when set (not owned; outlives the server): a plaintext request gets a 400
  // that says to use https:// and the connection is closed. Answers carry HSTS. The files are
  // re-read every tls_poll_seconds (0: only on ReloadTls()), and a changed certificate serves the
  // connections accepted from then on.
  ServerTlsContext* tls = nullptr;
  double tls_poll_seconds = 5;
};

// How a route takes its requests (HttpServer::Route, HttpServer::RoutePrefix).
struct RouteOptions {
  // A POST, PUT, PATCH or DELETE with a body must declare one of these as its Content-Type (none
  // given: application/json), or is refused with a 415 before its body is read: browsers send
  // text/plain and form types across origins unasked.
  std::vector<std::string> body_types;
  // The scope a key needs; default read for GET and HEAD, write for the rest.
  std::optional<auth::Scope> scope;
  // The handler checks the projects itself (they are in the body): the `project` parameter is
  // not required of project-bound keys.
  bool projects_in_body = false;
  // The handler may read much from the store (queries, exports, blobs): it runs on one of the
  // query threads, never on an I/O thread, so that slow reads do not hold up other connections.
  bool offload = false;

  // Options with only a scope (and where the projects are): what most routes that set any need.
  static RouteOptions Scoped(auth::Scope scope, bool projects_in_body = false) {
    RouteOptions options;
    options.scope = scope;
    options.projects_in_body = projects_in_body;
    return options;
  }
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, Logger& logger, MetricsRegistry& metrics);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Register before Start().
  void Route(const std::string& method, const std::string& path, HttpHandler handler,
             RouteOptions options = {});
  // Routes every path that starts with `prefix` (e.g. "/api/v1/blobs/") and has no exact route; the
  // handler reads the rest of req.path.
  void RoutePrefix(const std::string& method, const std::string& prefix, HttpHandler handler,
                   RouteOptions options = {});
  void WebSocket(const std::string& path, WebSocketHandler handler);
  // Answers GET and HEAD requests whose path has no route and is neither `/api` nor under `/api/`,
  // without asking for the API key: it must serve only data-free content (static files). Unknown
  // /api/ paths and other methods still get a JSON 404. For HEAD the server sends the headers of the
  // handler's response (Content-Length included) and drops its body.
  void Fallback(HttpHandler handler);

  // Binds and starts serving; fails clearly when the address is taken.
  Status Start();
  // Re-reads the TLS files now (SIGHUP): true when new connections get a new certificate, false
  // when nothing changed or there is no TLS; the error when the files do not load (the current
  // certificate stays). Logged and counted either way.
  Result<bool> ReloadTls();
  uint16_t port() const;
  // Stops accepting, closes every connection, joins the threads.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainwatch::api
