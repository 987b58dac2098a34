// HttpServer: its accept loop, TLS reloads and dispatch; the connections are in http_session.h.
// The only translation unit that includes Beast.
#include "api/http_server.h"

#include <algorithm>
#include <chrono>

#include "api/http_server_impl.h"
#include "api/http_session.h"
#include "api/json_writer.h"

namespace trainwatch::api {

std::string HttpRequest::Param(const std::string& name, const std::string& fallback) const {
  auto it = query.find(name);
  return it == query.end() ? fallback : it->second;
}

std::vector<std::string> HttpRequest::Params(const std::string& name) const {
  std::vector<std::string> out;
  auto [a, b] = query.equal_range(name);
  for (auto it = a; it != b; ++it) out.push_back(it->second);
  return out;
}

std::string HttpRequest::Header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

HttpResponse HttpResponse::Json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::Error(int status, const std::string& message) {
  std::string body = "{\"error\":";
  AppendString(&body, message);
  body += "}\n";
  return Json(status, std::move(body));
}

Status HttpServer::Impl::Start() {
  beast::error_code ec;
  auto address = net::ip::make_address(options_.host, ec);
  if (ec) return Status::InvalidArgument("listen address '" + options_.host + "': " + ec.message());
  tcp::endpoint endpoint(address, options_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::Unavailable("cannot listen on " + options_.host + ":" +
                               std::to_string(options_.port) + ": " + ec.message());
  }
  Accept();
  PollTls();
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    threads_.emplace_back([this] { ioc_.run(); });
  }
  return Status::Ok();
}

void HttpServer::Impl::Accept() {
  acceptor_.async_accept(net::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
    if (stopped_) return;
    if (ec == beast::errc::too_many_files_open ||
        ec == beast::errc::too_many_files_open_in_system) {
      // Out of file descriptors: close the oldest connection that only waits for a header, and
      // pause instead of spinning on accept (the newcomer stays in the listen queue meanwhile).
      accept_backoffs_.Add();
      const bool evicted = registry_.EvictOldestWaiting();
      // A closed connection frees a descriptor at once; with none to close, wait for one longer.
      accept_timer_.expires_after(std::chrono::milliseconds(evicted ? 5 : 100));
      accept_timer_.async_wait([this](beast::error_code) {
        if (!stopped_) Accept();
      });
      return;
    }
    if (!ec) OnAccepted(std::move(socket));
    Accept();
  });
}

void HttpServer::Impl::OnAccepted(tcp::socket socket) {
  beast::error_code ec;
  tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return;  // gone already
  if (!options_.allow_from.empty() && !options_.allow_from.Contains(peer.address().to_string())) {
    denied_.Add();
    socket.close(ec);  // not on the allow-list: not a byte in either direction
    return;
  }
  // Answers are written whole, so Nagle's algorithm only delays them: behind a TLS handshake's
  // last records (session tickets) it would hold a small answer for the client's delayed ACK.
  socket.set_option(tcp::no_delay(true), ec);
  std::shared_ptr<Slot> slot = registry_.Register(peer.address().to_string());
  if (!slot) {
    // Refuse politely: a one-shot 503 and close, without reading the request.
    refused_.Add();
    auto refused = std::make_shared<tcp::socket>(std::move(socket));
    static const std::string kBody = "{\"error\":\"too many connections; retry later\"}\n";
    static const std::string kBusy =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: "
        "close\r\nContent-Length: " +
        std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
    net::async_write(*refused, net::buffer(kBusy), [refused](beast::error_code, size_t) {});
    return;
  }
  if (options_.tls) {
    StartSession<TlsStream>(std::move(socket), std::move(slot));
  } else {
    StartSession<PlainStream>(std::move(socket), std::move(slot));
  }
}

template <class Stream>
void HttpServer::Impl::StartSession(tcp::socket socket, std::shared_ptr<Slot> slot) {
  std::shared_ptr<net::ssl::context> tls_context = options_.tls ? options_.tls->Current() : nullptr;
  auto session =
      std::make_shared<Session<Stream>>(*this, std::move(socket), slot, std::move(tls_context));
  registry_.Attach(*slot, session);
  session->Start();
}

Result<bool> HttpServer::Impl::ReloadTls() {
  if (!options_.tls) return false;
  MutexLock lock(tls_mu_);
  Result<bool> reloaded = options_.tls->Reload();
  if (!reloaded.ok()) {
    tls_reload_errors_.Add();
    if (reloaded.status().message() != last_tls_error_) {
      last_tls_error_ = reloaded.status().message();
      logger_.Error("TLS files changed but do not load; the certificate in use stays",
                    {{"error", reloaded.status().ToString()}});
    }
    return reloaded;
  }
  last_tls_error_.clear();
  if (*reloaded) {
    tls_reloads_.Add();
    TlsCertificateInfo cert = options_.tls->certificate();
    logger_.Info(
        "TLS certificate reloaded: new connections get it",
        {{"subject", cert.subject}, {"serial", cert.serial}, {"not_after", cert.not_after}});
  }
  return reloaded;
}

void HttpServer::Impl::PollTls() {
  if (!options_.tls || options_.tls_poll_seconds <= 0 || stopped_) return;
  tls_timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options_.tls_poll_seconds)));
  tls_timer_.async_wait([this](beast::error_code ec) {
    if (ec || stopped_) return;
    // Reading a few kilobytes on an I/O thread every few seconds; the handshake work dwarfs it.
    (void)ReloadTls();
    PollTls();
  });
}

auth::AuditEntry HttpServer::Impl::AuditEntryOf(
    const std::string& method, const std::string& path,
    const std::multimap<std::string, std::string>& query, const auth::Principal& who,
    const std::string& remote, const HttpResponse& response) const {
  auth::AuditEntry e;
  e.key = who.key_name;
  e.remote = remote;
  e.action = method + " " + path;
  for (const char* name : {"project", "run", "id"}) {
    auto it = query.find(name);
    if (it != query.end())
      e.target += (e.target.empty() ? "" : " ") + std::string(name) + "=" + it->second;
  }
  if (!response.audit_target.empty())
    e.target += (e.target.empty() ? "" : " ") + response.audit_target;
  e.outcome = response.status;
  if (response.status >= 400 && response.body.size() < 1024) e.detail = response.body;
  while (!e.detail.empty() && e.detail.back() == '\n') e.detail.pop_back();
  return e;
}

void HttpServer::Impl::Dispatch(HttpRequest&& req, const RouteMatch& route, Responder responder) {
  if (options_.audit && ChangesState(req.method)) {
    // Answered only once its audit entry is durable: what was acknowledged is in the audit log.
    responder = [this, method = req.method, path = req.path, query = req.query, who = req.principal,
                 remote = req.remote, inner = std::move(responder)](HttpResponse response) mutable {
      auth::AuditEntry entry = AuditEntryOf(method, path, query, who, remote, response);
      options_.audit->Append(std::move(entry),
                             [inner = std::move(inner), response = std::move(response)]() mutable {
                               inner(std::move(response));
                             });
    };
  }
  if (req.method == "OPTIONS" && admission_.CorsOrigin(req.Header("origin"))) {
    // A CORS preflight from a configured origin (the answer gets Access-Control-Allow-Origin).
    HttpResponse preflight;
    preflight.status = 204;
    preflight.content_type.clear();
    preflight.headers = {{"Access-Control-Allow-Methods", "GET, HEAD, POST"},
                         {"Access-Control-Allow-Headers", "Authorization, Content-Type"},
                         {"Access-Control-Max-Age", "600"}};
    responder(std::move(preflight));
    return;
  }
  if (route.fallback) {
    router_.fallback()(std::move(req),
                       std::move(responder));  // static files: no API key (they hold no data)
    return;
  }
  const HttpHandler* handler = route.handler;
  if (!handler) {
    responder(route.path_known
                  ? HttpResponse::Error(405, "method " + req.method + " not allowed on " + req.path)
                  : HttpResponse::Error(404, "no endpoint at " + req.path));
    return;
  }
  if (route.options->offload) {
    // Routes never change after Start(): the handler outlives the task.
    net::post(query_pool_,
              [handler, req = std::move(req), responder = std::move(responder)]() mutable {
                (*handler)(std::move(req), std::move(responder));
              });
    return;
  }
  (*handler)(std::move(req), std::move(responder));
}

void HttpServer::Impl::Stop() {
  if (stopped_.exchange(true)) return;
  net::post(ioc_, [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
    accept_timer_.cancel();
    tls_timer_.cancel();
  });
  ioc_.stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  // Queries still queued are dropped (their connections are gone); running ones finish first.
  query_pool_.stop();
  query_pool_.join();
}

HttpServer::HttpServer(HttpServerOptions options, Logger& logger, MetricsRegistry& metrics)
    : impl_(std::make_unique<Impl>(std::move(options), logger, metrics)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Route(const std::string& method, const std::string& path, HttpHandler handler,
                       RouteOptions options) {
  impl_->router_.Route(method, path, std::move(handler), std::move(options));
}

void HttpServer::RoutePrefix(const std::string& method, const std::string& prefix,
                             HttpHandler handler, RouteOptions options) {
  impl_->router_.RoutePrefix(method, prefix, std::move(handler), std::move(options));
}

void HttpServer::WebSocket(const std::string& path, WebSocketHandler handler) {
  impl_->router_.WebSocket(path, std::move(handler));
}

void HttpServer::Fallback(HttpHandler handler) { impl_->router_.Fallback(std::move(handler)); }

Status HttpServer::Start() { return impl_->Start(); }

Result<bool> HttpServer::ReloadTls() { return impl_->ReloadTls(); }

uint16_t HttpServer::port() const {
  beast::error_code ec;
  auto endpoint = impl_->acceptor_.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

void HttpServer::Stop() { impl_->Stop(); }

}  // namespace trainwatch::api