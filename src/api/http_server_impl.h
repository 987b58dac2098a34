// HttpServer::Impl: the Beast side of HttpServer, private to http_server.cc (the only translation
// unit that includes Beast, this header and http_session.h).
#pragma once

#include <utility>  // before Asio: GCC 12 + C++20 needs std::exchange declared first

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "api/connection_registry.h"
#include "api/http_admission.h"
#include "api/http_router.h"
#include "api/http_server.h"
#include "common/mutex.h"

namespace trainwatch::api {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// Routes are registered before Start() and only read after; the rest is thread-safe as each member
// says (the registry, counters and atomics are; tls_mu_ serializes TLS reloads).
class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, Logger& logger, MetricsRegistry& metrics)
      : options_(std::move(options)),
        logger_(logger),
        requests_(metrics.AddCounter("trainwatch_http_requests_total", "HTTP requests served.")),
        errors_(metrics.AddCounter("trainwatch_http_errors_total",
                                   "HTTP responses with status >= 400.")),
        evicted_(metrics.AddCounter(
            "trainwatch_http_connections_evicted_total",
            "Connections waiting for a request header closed to make room for new ones.")),
        refused_(metrics.AddCounter(
            "trainwatch_http_connections_refused_total",
            "Connections answered 503 because every slot was busy with a request.")),
        denied_(metrics.AddCounter(
            "trainwatch_http_connections_denied_total",
            "Connections closed at once: their address is not in --allow-from.")),
        accept_backoffs_(
            metrics.AddCounter("trainwatch_http_accept_backoffs_total",
                               "Pauses of the accept loop for want of file descriptors.")),
        tls_handshake_failures_(
            metrics.AddCounter("trainwatch_tls_handshake_failures_total",
                               "Connections to the HTTPS port closed before or during the TLS "
                               "handshake (plaintext HTTP, "
                               "no client certificate, no common protocol or cipher, timeouts).")),
        tls_reloads_(
            metrics.AddCounter("trainwatch_tls_reloads_total",
                               "TLS certificates loaded again after their files changed.")),
        tls_reload_errors_(metrics.AddCounter(
            "trainwatch_tls_reload_errors_total",
            "Changed TLS files that did not load (the certificate in use stays).")),
        latency_(metrics.AddHistogram("trainwatch_http_request_duration_seconds",
                                      "Time from a request read to its response queued.")),
        admission_(AdmissionOptions{.allowed_hosts = options_.allowed_hosts,
                                    .cors_origins = options_.cors_origins,
                                    .machine_names = MachineHostNames(),
                                    .keys = options_.keys,
                                    .tokens = options_.tokens}),
        registry_(static_cast<size_t>(options_.max_connections),
                  static_cast<size_t>(options_.max_connections_per_address), evicted_),
        acceptor_(ioc_),
        accept_timer_(ioc_),
        tls_timer_(ioc_),
        query_pool_(static_cast<size_t>(std::max(1, options_.query_threads))) {
    if (options_.tls) {
      metrics.AddGauge(
          "trainwatch_tls_certificate_expiry_timestamp_seconds",
          "When the certificate served to new HTTPS connections expires (Unix seconds).",
          [tls = options_.tls] { return tls->certificate().not_after; });
    }
    metrics.AddGauge("trainwatch_http_connections", "Open HTTP and WebSocket connections.",
                     [this] { return static_cast<double>(registry_.open()); });
  }

  using Slot = ConnectionRegistry::Slot;
  template <class Stream>
  class Session;
  template <class Stream>
  class WsSession;

  Status Start();
  void Stop();
  void Accept();
  void OnAccepted(tcp::socket socket);
  template <class Stream>
  void StartSession(tcp::socket socket, std::shared_ptr<Slot> slot);
  // Re-reads the TLS files every tls_poll_seconds.
  void PollTls();
  Result<bool> ReloadTls();
  // Runs the request's handler (`route`: its match, admitted already), or the fallback, or
  // answers a CORS preflight, a 404 or a 405; audited requests are answered once their entry is
  // durable.
  void Dispatch(HttpRequest&& req, const RouteMatch& route, Responder responder);
  auth::AuditEntry AuditEntryOf(const std::string& method, const std::string& path,
                                const std::multimap<std::string, std::string>& query,
                                const auth::Principal& who, const std::string& remote,
                                const HttpResponse& response) const;

  HttpServerOptions options_;
  Logger& logger_;
  Counter& requests_;
  Counter& errors_;
  Counter& evicted_;
  Counter& refused_;
  Counter& denied_;
  Counter& accept_backoffs_;
  Counter& tls_handshake_failures_;
  Counter& tls_reloads_;
  Counter& tls_reload_errors_;
  Histogram& latency_;
  HttpRouter router_;  // filled before Start(), read-only after
  const HttpAdmission admission_;
  // Before ioc_, whose destructor ends the connections (and releases the slots) it still holds.
  ConnectionRegistry registry_;
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  net::steady_timer accept_timer_;
  net::steady_timer tls_timer_;
  // Runs the `offload` routes' handlers and streamed bodies' producers (RouteOptions::offload).
  net::thread_pool query_pool_;
  Mutex tls_mu_;  // ReloadTls callers one at a time
  std::string last_tls_error_ TW_GUARDED_BY(tls_mu_);
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> next_peer_id_{1};
  std::atomic<bool> stopped_{false};
};

}  // namespace trainwatch::api
