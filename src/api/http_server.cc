// The only translation unit that includes Beast.
#include <utility>  // before Asio: GCC 12 + C++20 needs std::exchange declared first

#include "api/http_server.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <list>
#include <optional>
#include <set>
#include <unordered_map>
#include <thread>

#include <type_traits>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include "api/http_target.h"
#include "common/strings.h"

namespace trainwatch::api {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// Sent with every answer over TLS: browsers come back over https only (a year; no subdomains,
// which a self-hosted server cannot speak for).
constexpr const char* kHsts = "max-age=31536000";

// How long a TLS connection waits for the peer's close_notify before it is closed anyway.
constexpr int kTlsShutdownSeconds = 5;

// Sent with every answer; the dashboard's pages load nothing from elsewhere and are never framed.
constexpr std::pair<const char*, const char*> kSecurityHeaders[] = {
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"X-Frame-Options", "DENY"},
    {"Content-Security-Policy",
     "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
     "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
     "frame-ancestors 'none'"},
};

bool ChangesState(std::string_view method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

// The host of a Host header value ("Name:8080", "[::1]:8080", "name"), in lower case, without a
// trailing dot.
std::string HostOfHeader(std::string_view value) {
  std::string_view host = value;
  if (host.starts_with('[')) {
    size_t close = host.find(']');
    host = close == std::string_view::npos ? std::string_view() : host.substr(1, close - 1);
  } else if (size_t colon = host.find(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (host.ends_with('.')) host.remove_suffix(1);
  return ToLowerAscii(host);
}

// "application/json" of "Application/JSON; charset=utf-8".
std::string MediaType(std::string_view content_type) {
  return ToLowerAscii(TrimBlanks(content_type.substr(0, content_type.find(';'))));
}

}  // namespace

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
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') {
      escaped.push_back('\\');
      escaped.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      escaped += buf;
    } else {
      escaped.push_back(c);
    }
  }
  return Json(status, "{\"error\":\"" + escaped + "\"}\n");
}

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, Logger& logger, MetricsRegistry& metrics)
      : options_(std::move(options)),
        logger_(logger),
        acceptor_(ioc_),
        accept_timer_(ioc_),
        tls_timer_(ioc_),
        query_pool_(static_cast<size_t>(std::max(1, options_.query_threads))),
        requests_(metrics.AddCounter("trainwatch_http_requests_total", "HTTP requests served.")),
        errors_(metrics.AddCounter("trainwatch_http_errors_total", "HTTP responses with status >= 400.")),
        evicted_(metrics.AddCounter("trainwatch_http_connections_evicted_total",
                                    "Connections waiting for a request header closed to make room for new ones.")),
        refused_(metrics.AddCounter("trainwatch_http_connections_refused_total",
                                    "Connections answered 503 because every slot was busy with a request.")),
        denied_(metrics.AddCounter("trainwatch_http_connections_denied_total",
                                   "Connections closed at once: their address is not in --allow-from.")),
        accept_backoffs_(metrics.AddCounter("trainwatch_http_accept_backoffs_total",
                                            "Pauses of the accept loop for want of file descriptors.")),
        tls_handshake_failures_(metrics.AddCounter(
            "trainwatch_tls_handshake_failures_total",
            "Connections to the HTTPS port closed before or during the TLS handshake (plaintext HTTP, "
            "no client certificate, no common protocol or cipher, timeouts).")),
        tls_reloads_(metrics.AddCounter("trainwatch_tls_reloads_total",
                                        "TLS certificates loaded again after their files changed.")),
        tls_reload_errors_(metrics.AddCounter("trainwatch_tls_reload_errors_total",
                                              "Changed TLS files that did not load (the certificate in use stays).")),
        latency_(metrics.AddHistogram("trainwatch_http_request_duration_seconds",
                                      "Time from a request read to its response queued.")) {
    if (options_.tls) {
      metrics.AddGauge("trainwatch_tls_certificate_expiry_timestamp_seconds",
                       "When the certificate served to new HTTPS connections expires (Unix seconds).",
                       [tls = options_.tls] { return tls->certificate().not_after; });
    }
    metrics.AddGauge("trainwatch_http_connections", "Open HTTP and WebSocket connections.", [this] {
      std::lock_guard lock(conn_mu_);
      return static_cast<double>(open_connections_);
    });
  }

  struct RouteKey {
    std::string method, path;
    auto operator<=>(const RouteKey&) const = default;
  };

  // What the admission checks read of a request, before any of its body.
  struct Head {
    std::string method;
    RequestTarget target;
    std::string host, origin, authorization, content_type;
    std::string remote;  // client address
    bool has_body = false;
    bool upgrade = false;
  };

  class Connection;
  template <class Stream>
  class Session;
  template <class Stream>
  class WsSession;
  struct Slot;

  Status Start();
  void Stop();
  void Accept();
  void OnAccepted(tcp::socket socket);
  template <class Stream>
  void StartSession(tcp::socket socket, std::shared_ptr<Slot> slot);
  // Re-reads the TLS files every tls_poll_seconds.
  void PollTls();
  Result<bool> ReloadTls();
  // The handler for method and path, or null; `path_known` tells a 405 from a 404.
  const HttpHandler* FindHandler(const std::string& method, const std::string& path, bool* path_known) const;
  // Requests the fallback serves without a key: GET/HEAD of a path outside /api with no route.
  bool ForFallback(const std::string& method, const std::string& path) const;
  // The answer that refuses this request before its body is read, if any: a foreign Host or
  // Origin, a missing key or one without the route's scope or project, a body type the route
  // does not take. Otherwise *who is the request's principal.
  std::optional<HttpResponse> Refusal(const Head& head, auth::Principal* who) const;
  // The key's refusal, or none; *who the principal it authenticates as.
  std::optional<HttpResponse> KeyRefusal(const Head& head, auth::Principal* who) const;
  const RouteOptions& OptionsOf(const std::string& method, const std::string& path) const;
  bool HostAllowed(std::string_view host_header) const;
  bool OriginAllowed(const Head& head) const;
  bool CorsOrigin(std::string_view origin) const;
  void Dispatch(HttpRequest&& req, Responder responder);
  // True when the route's handler runs on the query pool.
  bool Offloaded(const std::string& method, const std::string& path) const;
  auth::AuditEntry AuditEntryOf(const std::string& method, const std::string& path,
                                const std::multimap<std::string, std::string>& query, const auth::Principal& who,
                                const std::string& remote, const HttpResponse& response) const;

  // The connection registry behind the caps (GUARDED_BY(conn_mu_) all through).
  std::shared_ptr<Slot> Register(const std::string& address);
  // Marks a slot as waiting for a request header (true) or reading one that came (false); false
  // when the connection was closed to make room and must end.
  bool SetWaiting(Slot& slot, bool waiting);
  void Release(Slot* slot);
  std::shared_ptr<Connection> TakeOldestWaiting(std::list<Slot*>& slots);  // REQUIRES(conn_mu_)
  std::shared_ptr<Connection> TakeOldestWaitingAnywhere();                   // REQUIRES(conn_mu_)

  HttpServerOptions options_;
  Logger& logger_;
  // The connection registry; before ioc_, whose destructor ends the connections it still holds.
  std::mutex conn_mu_;
  std::unordered_map<std::string, std::list<Slot*>> by_address_;
  size_t open_connections_ = 0;
  uint64_t waiting_clock_ = 0;  // orders the waits, oldest first
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  net::steady_timer accept_timer_;
  net::steady_timer tls_timer_;
  // Runs the `offload` routes' handlers and streamed bodies' producers (RouteOptions::offload).
  net::thread_pool query_pool_;
  std::string last_tls_error_;  // only touched by ReloadTls callers, one at a time (tls_mu_)
  std::mutex tls_mu_;
  std::vector<std::thread> threads_;
  std::map<RouteKey, HttpHandler> routes_;
  std::map<RouteKey, RouteOptions> route_options_;
  std::map<RouteKey, HttpHandler> prefix_routes_;  // RouteKey::path is the prefix
  std::set<RouteKey> offload_prefixes_;            // prefix routes whose handlers run on query_pool_
  std::map<std::string, WebSocketHandler> websockets_;
  HttpHandler fallback_;  // may be empty
  // Host names accepted besides IP addresses and localhost; suffixes from "*.domain" entries.
  std::set<std::string> host_names_;
  std::vector<std::string> host_suffixes_;
  bool any_host_ = false;
  std::atomic<uint64_t> next_peer_id_{1};
  std::atomic<bool> stopped_{false};

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
};

// What the connection caps can close: an HTTP connection waiting for its next request header.
class HttpServer::Impl::Connection {
 public:
  virtual ~Connection() = default;
  // Closes the connection; from any thread.
  virtual void Evict() = 0;
};

// One open connection as the caps see it: where it is from, and whether it is only waiting for a
// request header. Owned by the connection (HTTP, then WebSocket after an upgrade); leaving the
// registry when the connection ends.
struct HttpServer::Impl::Slot {
  Slot(Impl& server, std::string address) : server(server), address(std::move(address)) {}
  ~Slot() { server.Release(this); }

  Impl& server;
  const std::string address;
  // All GUARDED_BY(server.conn_mu_):
  std::list<Slot*>::iterator position;  // in server.by_address_[address] while listed
  bool listed = false;
  bool evicted = false;
  bool waiting = false;
  uint64_t waiting_since = 0;
  std::weak_ptr<Connection> http;  // what to close when evicted
};

// One WebSocket connection, over TCP or TLS: `Next` is what the upgraded HTTP connection spoke on
// (a TCP socket, or the TLS stream with its session).
template <class Stream>
class HttpServer::Impl::WsSession : public WebSocketPeer,
                                    public std::enable_shared_from_this<WsSession<Stream>> {
 public:
  template <class Next>
  WsSession(Impl& server, Next&& next, std::shared_ptr<net::ssl::context> tls_context, std::shared_ptr<Slot> slot,
            const WebSocketHandler& handler, auth::Principal principal)
      : server_(server), tls_context_(std::move(tls_context)), ws_(std::forward<Next>(next)), slot_(std::move(slot)),
        handler_(handler), id_(server.next_peer_id_++), principal_(std::move(principal)) {}
  void Run(http::request<http::string_body> req) {
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.read_message_max(1 << 20);
    ws_.async_accept(req, beast::bind_front_handler(&WsSession::OnAccept, shared_from_this()));
  }

  void Send(std::string text) override {
    net::post(ws_.get_executor(), [self = shared_from_this(), text = std::move(text)]() mutable {
      if (self->closed_) return;
      self->queued_bytes_ += text.size();
      if (self->queued_bytes_ > self->server_.options_.max_websocket_queue_bytes) {
        self->server_.logger_.Warn("websocket peer too slow; disconnecting", {{"peer", self->id_}});
        self->DoClose();
        return;
      }
      self->queue_.push_back(std::move(text));
      if (self->queue_.size() == 1) self->WriteNext();
    });
  }

  void Close() override {
    net::post(ws_.get_executor(), [self = shared_from_this()] { self->DoClose(); });
  }

  uint64_t id() const override { return id_; }
  const auth::Principal& principal() const override { return principal_; }

 private:
  void OnAccept(beast::error_code ec) {
    if (ec) return;
    if (handler_.on_open) handler_.on_open(shared_from_this());
    Read();
  }

  void Read() {
    ws_.async_read(buffer_, beast::bind_front_handler(&WsSession::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, size_t) {
    if (ec) {
      Finish();
      return;
    }
    std::string text = beast::buffers_to_string(buffer_.data());
    buffer_.consume(buffer_.size());
    if (handler_.on_message) handler_.on_message(shared_from_this(), text);
    Read();
  }

  void WriteNext() {
    ws_.text(true);
    ws_.async_write(net::buffer(queue_.front()),
                    beast::bind_front_handler(&WsSession::OnWrite, shared_from_this()));
  }

  void OnWrite(beast::error_code ec, size_t) {
    if (ec) {
      Finish();
      return;
    }
    queued_bytes_ -= queue_.front().size();
    queue_.pop_front();
    if (!queue_.empty()) WriteNext();
  }

  void DoClose() {
    if (closed_) return;
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    Finish();
  }

  void Finish() {
    if (closed_) return;
    closed_ = true;
    queue_.clear();
    if (handler_.on_close) handler_.on_close(shared_from_this());
  }

  using std::enable_shared_from_this<WsSession>::shared_from_this;

  Impl& server_;
  std::shared_ptr<net::ssl::context> tls_context_;  // null over TCP; before ws_, which uses it
  websocket::stream<Stream> ws_;
  std::shared_ptr<Slot> slot_;
  const WebSocketHandler& handler_;
  const uint64_t id_;
  const auth::Principal principal_;
  beast::flat_buffer buffer_;
  std::deque<std::string> queue_;  // only touched on the strand
  size_t queued_bytes_ = 0;
  bool closed_ = false;
};
// One HTTP connection: reads requests one after another (keep-alive), answers each in order. Over
// TLS (Stream = TlsStream) it first tells a TLS client from a plaintext one, and shakes hands.
template <class Stream>
class HttpServer::Impl::Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr size_t kReadBufferBytes = 64 << 10;
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  // `tls_context`: the server's TLS context when the connection was accepted (null over TCP).
  Session(Impl& server, tcp::socket&& socket, std::shared_ptr<Slot> slot,
          std::shared_ptr<net::ssl::context> tls_context)
      : server_(server), tls_context_(std::move(tls_context)),
        stream_(MakeStream(std::move(socket), tls_context_.get())), slot_(std::move(slot)) {
    // Beast sizes each socket read by the buffer's spare room: without this, 512 bytes at a time.
    buffer_.reserve(kReadBufferBytes);
  }

  void Start() {
    net::dispatch(tcp().get_executor(), [self = shared_from_this()] {
      if constexpr (kTls) {
        self->DetectTls();
      } else {
        self->Read();
      }
    });
  }

  void Evict() override {
    net::post(tcp().get_executor(), [self = shared_from_this()] { self->tcp().close(); });
  }

 private:
  using std::enable_shared_from_this<Session>::shared_from_this;

  static Stream MakeStream(tcp::socket&& socket, net::ssl::context* tls_context) {
    if constexpr (kTls) {
      return Stream(beast::tcp_stream(std::move(socket)), *tls_context);
    } else {
      return Stream(std::move(socket));
    }
  }

  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

  // A TLS connection starts with a ClientHello; anything else is refused with a plaintext 400
  // that says what to do (what a browser or curl pointed at http:// shows). The handshake must
  // be done within the header timeout: it is evictable, like a wait for a header.
  void DetectTls() {
    if (!server_.SetWaiting(*slot_, true)) return;
    tcp().expires_after(std::chrono::seconds(server_.options_.header_timeout_seconds));
    beast::async_detect_ssl(tcp(), buffer_, beast::bind_front_handler(&Session::OnDetected, shared_from_this()));
  }

  void OnDetected(beast::error_code ec, bool tls) {
    if (ec) {
      if (ec != net::error::eof && ec != net::error::operation_aborted) server_.tls_handshake_failures_.Add();
      tcp().close();
      return;
    }
    if (!tls) {
      server_.tls_handshake_failures_.Add();
      static const std::string kBody =
          "{\"error\":\"this server speaks HTTPS only: use https:// (and wss:// for WebSockets)\"}\n";
      static const std::string kAnswer =
          "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
          std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
      net::async_write(tcp(), net::buffer(kAnswer), [self = shared_from_this()](beast::error_code, size_t) {
        beast::error_code ignored;
        self->tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
      });
      return;
    }
    stream_.async_handshake(net::ssl::stream_base::server, buffer_.data(),
                            beast::bind_front_handler(&Session::OnHandshake, shared_from_this()));
  }

  void OnHandshake(beast::error_code ec, size_t used) {
    if (ec) {
      server_.tls_handshake_failures_.Add();
      server_.logger_.Debug("TLS handshake failed", {{"client", slot_->address}, {"error", ec.message()}});
      tcp().close();
      return;
    }
    buffer_.consume(used);
    Read();
  }

  void Read() {
    if (!server_.SetWaiting(*slot_, true)) return;
    head_ = false;
    cors_origin_.clear();
    parser_.emplace();
    parser_->body_limit(server_.options_.max_body_bytes);
    parser_->header_limit(64 * 1024);
    tcp().expires_after(std::chrono::seconds(server_.options_.header_timeout_seconds));
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::OnHeader, shared_from_this()));
  }

  // The request line and headers are in: the admission checks run before any body byte is read,
  // and clients that sent `Expect: 100-continue` (curl, for bodies over 1 MiB) get their go-ahead
  // only once admitted.
  void OnHeader(beast::error_code ec, size_t) {
    if (!server_.SetWaiting(*slot_, false)) return;  // closed to make room
    if (ec) {
      OnRead(ec, 0);
      return;
    }
    const auto& header = parser_->get();
    request_head_ = Head{};
    request_head_.method = std::string(header.method_string());
    request_head_.target = ParseTarget(std::string_view(header.target().data(), header.target().size()));
    auto field = [&](http::field f) {
      auto it = header.find(f);
      return it == header.end() ? std::string() : std::string(it->value());
    };
    request_head_.host = field(http::field::host);
    request_head_.origin = field(http::field::origin);
    request_head_.authorization = field(http::field::authorization);
    request_head_.content_type = field(http::field::content_type);
    request_head_.has_body = parser_->chunked() || parser_->content_length().value_or(0) > 0;
    request_head_.upgrade = websocket::is_upgrade(header);
    request_head_.remote = slot_->address;
    head_ = header.method() == http::verb::head;
    version_ = header.version();
    if (server_.CorsOrigin(request_head_.origin)) cors_origin_ = request_head_.origin;
    if (auto refusal = server_.Refusal(request_head_, &principal_)) {
      if ((refusal->status == 401 || refusal->status == 403) && server_.options_.audit) {
        // Refused keys are audited; the answer waits for the entry, as every audited one does.
        auth::AuditEntry entry = server_.AuditEntryOf(request_head_.method, request_head_.target.path,
                                                      request_head_.target.query, principal_, slot_->address,
                                                      *refusal);
        server_.options_.audit->Append(std::move(entry), [self = shared_from_this(), refusal = *refusal]() mutable {
          net::post(self->tcp().get_executor(),
                    [self, refusal = std::move(refusal)]() mutable { self->RespondAndClose(std::move(refusal)); });
        });
        return;
      }
      RespondAndClose(std::move(*refusal));
      return;
    }
    if (parser_->is_done()) {
      OnRead(ec, 0);
      return;
    }
    auto expect = header.find(http::field::expect);
    if (expect != header.end() && beast::iequals(expect->value(), "100-continue")) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      net::async_write(stream_, net::buffer(kContinue),
                       [self = shared_from_this()](beast::error_code ec, size_t) {
                         if (ec) return self->Shutdown();
                         self->ReadBody();
                       });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    tcp().expires_after(std::chrono::seconds(server_.options_.read_timeout_seconds));
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, size_t) {
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
        ec == beast::error::timeout || ec == net::error::operation_aborted) {
      Shutdown();
      return;
    }
    if (ec == http::error::body_limit) {
      RespondAndClose(HttpResponse::Error(
          413, "request body exceeds the limit of " +
                   std::to_string(server_.options_.max_body_bytes) + " bytes"));
      return;
    }
    if (ec == http::error::header_limit) {
      RespondAndClose(HttpResponse::Error(431, "request headers too large"));
      return;
    }
    if (ec) {
      RespondAndClose(HttpResponse::Error(400, "malformed HTTP request: " + ec.message()));
      return;
    }
    http::request<http::string_body> req = parser_->release();
    keep_alive_ = req.keep_alive();
    if (request_head_.upgrade) {
      auto it = server_.websockets_.find(request_head_.target.path);
      if (it == server_.websockets_.end()) {
        RespondAndClose(HttpResponse::Error(404, "no WebSocket endpoint at " + request_head_.target.path));
        return;
      }
      tcp().expires_never();
      if constexpr (kTls) {
        std::make_shared<WsSession<TlsStream>>(server_, std::move(stream_), std::move(tls_context_), std::move(slot_),
                                               it->second, std::move(principal_))
            ->Run(std::move(req));
      } else {
        std::make_shared<WsSession<PlainStream>>(server_, stream_.release_socket(), nullptr, std::move(slot_),
                                                 it->second, std::move(principal_))
            ->Run(std::move(req));
      }
      return;
    }
    HttpRequest request;
    request.method = std::move(request_head_.method);
    request.path = std::move(request_head_.target.path);
    request.query = std::move(request_head_.target.query);
    for (const auto& field : req) request.headers[ToLowerAscii(std::string_view(field.name_string().data(), field.name_string().size()))] = std::string(field.value());
    request.body = std::move(req.body());
    request.remote = slot_->address;
    request.principal = std::move(principal_);
    started_ = std::chrono::steady_clock::now();
    tcp().expires_never();  // the handler may take a while (durable ack); no read is pending
    server_.Dispatch(std::move(request), [self = shared_from_this()](HttpResponse response) {
      net::post(self->tcp().get_executor(), [self, response = std::move(response)]() mutable {
        self->Write(std::move(response), /*close=*/!self->keep_alive_);
      });
    });
  }

  void RespondAndClose(HttpResponse response) { Write(std::move(response), /*close=*/true); }

  void Write(HttpResponse response, bool close) {
    auto elapsed = std::chrono::steady_clock::now() - started_;
    server_.latency_.Observe(std::chrono::duration<double>(elapsed).count());
    server_.requests_.Add();
    if (response.status >= 400) server_.errors_.Add();
    if (!cors_origin_.empty()) {
      response.headers.emplace_back("Access-Control-Allow-Origin", cors_origin_);
      response.headers.emplace_back("Vary", "Origin");
    }
    // 1xx, 204 and 304 never carry a body (Beast throws if asked to); HEAD gets the headers alone.
    int status = response.status;
    if (response.stream && !head_ && status >= 200 && status != 204 && status != 304) {
      WriteStreamed(std::move(response), close);
      return;
    }
    if (head_ || status < 200 || status == 204 || status == 304) {
      auto res = std::make_shared<http::response<http::empty_body>>(static_cast<http::status>(status),
                                                                     version_ ? version_ : 11);
      SetFields(*res, response);
      if (head_ && status >= 200 && status != 204 && status != 304) res->content_length(response.body.size());
      res->keep_alive(!close);
      Send(std::move(res), close);
      return;
    }
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(status),
                                                                    version_ ? version_ : 11);
    SetFields(*res, response);
    res->body() = std::move(response.body);
    res->keep_alive(!close);
    res->prepare_payload();
    Send(std::move(res), close);
  }

  using Producer = std::function<StreamStep(std::string*)>;

  // The header with chunked encoding, then one chunk per piece the producer makes on a query
  // thread, each made only once the previous one is written.
  void WriteStreamed(HttpResponse response, bool close) {
    auto res = std::make_shared<http::response<http::empty_body>>(static_cast<http::status>(response.status),
                                                                   version_ ? version_ : 11);
    SetFields(*res, response);
    res->chunked(true);
    res->keep_alive(!close);
    auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    auto producer = std::make_shared<Producer>(std::move(response.stream));
    tcp().expires_after(std::chrono::seconds(server_.options_.read_timeout_seconds));
    http::async_write_header(stream_, *serializer,
                             [self = shared_from_this(), res, serializer, producer, close](beast::error_code ec, size_t) {
                               if (ec) return self->Shutdown();
                               self->ProducePiece(producer, close);
                             });
  }

  void ProducePiece(std::shared_ptr<Producer> producer, bool close) {
    net::post(server_.query_pool_, [self = shared_from_this(), producer, close] {
      auto piece = std::make_shared<std::string>();
      StreamStep step = (*producer)(piece.get());
      net::post(self->tcp().get_executor(), [self, producer, piece, step, close] {
        self->WritePiece(producer, piece, step, close);
      });
    });
  }

  void WritePiece(std::shared_ptr<Producer> producer, std::shared_ptr<std::string> piece, StreamStep step,
                  bool close) {
    if (step == StreamStep::kFailed) {
      tcp().close();  // no terminating chunk: the client sees the answer is incomplete
      return;
    }
    auto after = [self = shared_from_this(), producer, piece, step, close](beast::error_code ec, size_t) {
      if (ec) return self->Shutdown();
      if (step == StreamStep::kMore) return self->ProducePiece(producer, close);
      net::async_write(self->stream_, http::make_chunk_last(), [self, close](beast::error_code ec, size_t) {
        if (ec || close) return self->Shutdown();
        self->Read();
      });
    };
    tcp().expires_after(std::chrono::seconds(server_.options_.read_timeout_seconds));
    if (piece->empty()) {
      after({}, 0);
      return;
    }
    net::async_write(stream_, http::make_chunk(net::buffer(*piece)), std::move(after));
  }

  template <class Message>
  static void SetFields(Message& res, const HttpResponse& response) {
    res.set(http::field::server, "trainwatch");
    for (const auto& [name, value] : kSecurityHeaders) res.set(name, value);
    if constexpr (kTls) res.set(http::field::strict_transport_security, kHsts);
    if (!response.content_type.empty()) res.set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) res.set(name, value);
  }

  template <class Body>
  void Send(std::shared_ptr<http::response<Body>> res, bool close) {
    tcp().expires_after(std::chrono::seconds(server_.options_.read_timeout_seconds));
    http::async_write(stream_, *res, [self = shared_from_this(), res, close](beast::error_code ec, size_t) {
      if (ec || close) {
        self->Shutdown();
        return;
      }
      self->Read();
    });
  }

  // Ends the connection after the last answer: over TCP, a FIN (the client reads to the end);
  // over TLS, a close_notify, then the socket closes when the client answers or after a while.
  void Shutdown() {
    if constexpr (kTls) {
      tcp().expires_after(std::chrono::seconds(kTlsShutdownSeconds));
      stream_.async_shutdown([self = shared_from_this()](beast::error_code) { self->tcp().close(); });
    } else {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
  }

  Impl& server_;
  std::shared_ptr<net::ssl::context> tls_context_;  // null over TCP; before stream_, which uses it
  Stream stream_;
  std::shared_ptr<Slot> slot_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Head request_head_;
  auth::Principal principal_;
  std::string cors_origin_;  // the request's Origin when it is one of cors_origins
  bool keep_alive_ = false;
  bool head_ = false;  // the request being answered is a HEAD
  unsigned version_ = 11;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

Status HttpServer::Impl::Start() {
  for (const std::string& entry : options_.allowed_hosts) {
    std::string name = ToLowerAscii(TrimBlanks(entry));
    if (name == "*") any_host_ = true;
    else if (name.starts_with("*.")) host_suffixes_.push_back(name.substr(1));
    else if (!name.empty()) host_names_.insert(HostOfHeader(name));
  }
  char hostname[256] = {};
  if (gethostname(hostname, sizeof hostname - 1) == 0 && hostname[0] != '\0') {
    std::string name = ToLowerAscii(hostname);
    host_names_.insert(name);
    host_names_.insert(name.substr(0, name.find('.')));
  }
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
    if (ec == beast::errc::too_many_files_open || ec == beast::errc::too_many_files_open_in_system) {
      // Out of file descriptors: close the oldest connection that only waits for a header, and
      // pause instead of spinning on accept (the newcomer stays in the listen queue meanwhile).
      accept_backoffs_.Add();
      std::shared_ptr<Connection> victim;
      {
        std::lock_guard lock(conn_mu_);
        victim = TakeOldestWaitingAnywhere();
      }
      if (victim) {
        evicted_.Add();
        victim->Evict();
      }
      // A closed connection frees a descriptor at once; with none to close, wait for one longer.
      accept_timer_.expires_after(std::chrono::milliseconds(victim ? 5 : 100));
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
  std::shared_ptr<Slot> slot = Register(peer.address().to_string());
  if (!slot) {
    // Refuse politely: a one-shot 503 and close, without reading the request.
    refused_.Add();
    auto refused = std::make_shared<tcp::socket>(std::move(socket));
    static const std::string kBody = "{\"error\":\"too many connections; retry later\"}\n";
    static const std::string kBusy =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: "
        "close\r\nContent-Length: " + std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
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
  auto session = std::make_shared<Session<Stream>>(*this, std::move(socket), slot, std::move(tls_context));
  {
    std::lock_guard lock(conn_mu_);
    slot->http = session;
  }
  session->Start();
}

Result<bool> HttpServer::Impl::ReloadTls() {
  if (!options_.tls) return false;
  std::lock_guard lock(tls_mu_);
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
    logger_.Info("TLS certificate reloaded: new connections get it",
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

std::shared_ptr<HttpServer::Impl::Slot> HttpServer::Impl::Register(const std::string& address) {
  std::shared_ptr<Connection> victim;
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(conn_mu_);
    std::list<Slot*>& mine = by_address_[address];
    if (mine.size() >= static_cast<size_t>(options_.max_connections_per_address)) {
      victim = TakeOldestWaiting(mine);
    } else if (open_connections_ >= static_cast<size_t>(options_.max_connections)) {
      victim = TakeOldestWaitingAnywhere();
    }
    if (mine.size() < static_cast<size_t>(options_.max_connections_per_address) &&
        open_connections_ < static_cast<size_t>(options_.max_connections)) {
      slot = std::make_shared<Slot>(*this, address);
      slot->position = mine.insert(mine.end(), slot.get());
      slot->listed = true;
      ++open_connections_;
    } else if (mine.empty()) {
      by_address_.erase(address);
    }
  }
  if (victim) {
    evicted_.Add();
    victim->Evict();
  }
  return slot;
}

std::shared_ptr<HttpServer::Impl::Connection> HttpServer::Impl::TakeOldestWaiting(std::list<Slot*>& slots) {
  Slot* oldest = nullptr;
  std::shared_ptr<Connection> session;
  for (Slot* slot : slots) {
    if (!slot->waiting || (oldest && slot->waiting_since >= oldest->waiting_since)) continue;
    if (auto alive = slot->http.lock()) {
      oldest = slot;
      session = std::move(alive);
    }
  }
  if (!oldest) return nullptr;
  slots.erase(oldest->position);
  oldest->listed = false;
  oldest->evicted = true;
  oldest->waiting = false;
  --open_connections_;
  return session;
}

std::shared_ptr<HttpServer::Impl::Connection> HttpServer::Impl::TakeOldestWaitingAnywhere() {
  // The address with the most connections gives one up: a flood pays for itself.
  std::list<Slot*>* busiest = nullptr;
  for (auto& [address, slots] : by_address_) {
    bool has_waiting = std::any_of(slots.begin(), slots.end(), [](const Slot* s) { return s->waiting; });
    if (has_waiting && (!busiest || slots.size() > busiest->size())) busiest = &slots;
  }
  return busiest ? TakeOldestWaiting(*busiest) : nullptr;
}

bool HttpServer::Impl::SetWaiting(Slot& slot, bool waiting) {
  std::lock_guard lock(conn_mu_);
  if (slot.evicted) return false;
  slot.waiting = waiting;
  if (waiting) slot.waiting_since = ++waiting_clock_;
  return true;
}

void HttpServer::Impl::Release(Slot* slot) {
  std::lock_guard lock(conn_mu_);
  if (!slot->listed) return;
  auto it = by_address_.find(slot->address);
  it->second.erase(slot->position);
  if (it->second.empty()) by_address_.erase(it);
  --open_connections_;
}

const HttpHandler* HttpServer::Impl::FindHandler(const std::string& method, const std::string& path,
                                                 bool* path_known) const {
  auto it = routes_.find(RouteKey{method, path});
  const HttpHandler* handler = it != routes_.end() ? &it->second : nullptr;
  bool known = handler != nullptr;
  for (auto r = routes_.begin(); !known && r != routes_.end(); ++r) known = r->first.path == path;
  for (const auto& [key, prefix_handler] : prefix_routes_) {
    if (known && handler) break;
    if (!path.starts_with(key.path)) continue;
    known = true;
    if (!handler && key.method == method) handler = &prefix_handler;
  }
  *path_known = known;
  return handler;
}

bool HttpServer::Impl::ForFallback(const std::string& method, const std::string& path) const {
  bool path_known = false;
  FindHandler(method, path, &path_known);
  bool api_path = path == "/api" || path.starts_with("/api/");
  return !path_known && !api_path && fallback_ && (method == "GET" || method == "HEAD");
}

bool HttpServer::Impl::HostAllowed(std::string_view host_header) const {
  if (any_host_ || host_header.empty()) return true;  // no Host: not a browser
  std::string host = HostOfHeader(host_header);
  if (host.empty()) return false;
  beast::error_code ec;
  net::ip::make_address(host, ec);
  if (!ec) return true;  // an IP address cannot be rebound to another server
  if (host == "localhost" || host.ends_with(".localhost") || host_names_.contains(host)) return true;
  return std::any_of(host_suffixes_.begin(), host_suffixes_.end(),
                     [&](const std::string& suffix) { return host.ends_with(suffix); });
}

bool HttpServer::Impl::CorsOrigin(std::string_view origin) const {
  if (origin.empty()) return false;
  return std::any_of(options_.cors_origins.begin(), options_.cors_origins.end(),
                     [&](const std::string& allowed) { return EqualsIgnoreCase(allowed, origin); });
}

bool HttpServer::Impl::OriginAllowed(const Head& head) const {
  if (head.origin.empty()) return true;  // not sent by a browser
  if (CorsOrigin(head.origin)) return true;
  std::string_view origin = head.origin;
  size_t scheme_end = origin.find("://");
  if (scheme_end == std::string_view::npos) return false;  // "null": a sandboxed or file page
  return !head.host.empty() && EqualsIgnoreCase(origin.substr(scheme_end + 3), head.host);
}

const RouteOptions& HttpServer::Impl::OptionsOf(const std::string& method, const std::string& path) const {
  static const RouteOptions kDefaults;
  auto it = route_options_.find(RouteKey{method, path});
  return it != route_options_.end() ? it->second : kDefaults;
}

std::optional<HttpResponse> HttpServer::Impl::KeyRefusal(const Head& head, auth::Principal* who) const {
  *who = auth::Principal{};
  const std::string& path = head.target.path;
  if (!options_.keys || !options_.keys->enabled()) return std::nullopt;
  if (path == "/healthz" || head.method == "OPTIONS" || (!head.upgrade && ForFallback(head.method, path))) {
    return std::nullopt;  // data-free answers
  }
  std::string_view sent;
  if (head.authorization.starts_with("Bearer ")) sent = std::string_view(head.authorization).substr(7);
  const auto& query = head.target.query;
  auto token = query.find("token");
  if (sent.empty() && token == query.end() && query.contains("key")) {
    return HttpResponse::Error(401, "a key is not accepted in a URL (?key=): send it as Authorization: Bearer <key>, "
                                    "or, where a browser cannot send a header (WebSocket, <img>), a short-lived "
                                    "?token= from POST /api/v1/tokens");
  }
  // Where a browser cannot send a header, a short-lived token stands in for its key: reads only.
  const bool by_token = sent.empty() && token != query.end();
  if (by_token && head.method != "GET" && head.method != "HEAD" && !head.upgrade) {
    return HttpResponse::Error(401, "a token (?token=) is good only for GET, HEAD and WebSocket upgrades; send "
                                    "the key as Authorization: Bearer <key>");
  }
  Result<auth::Principal> principal =
      !by_token ? options_.keys->Authenticate(sent)
      : options_.tokens ? options_.tokens->Authenticate(token->second)
                        : Result<auth::Principal>(Status::Unauthenticated("this server issues no tokens"));
  if (!principal.ok()) return HttpResponse::Error(401, principal.status().message());
  *who = std::move(*principal);
  if (!who->allow_from.empty() && !who->allow_from.Contains(head.remote)) {
    return HttpResponse::Error(403, "key '" + who->key_name + "' may not be used from " + head.remote);
  }
  const RouteOptions& route = OptionsOf(head.method, path);
  const auth::Scope needed = route.scope.value_or(ChangesState(head.method) ? auth::Scope::kWrite : auth::Scope::kRead);
  if (!who->Allows(needed)) {
    return HttpResponse::Error(403, "key '" + who->key_name + "' has scope " + std::string(auth::ScopeName(who->scope)) +
                                        "; " + head.method + " " + path + " needs " +
                                        std::string(auth::ScopeName(needed)));
  }
  // WebSocket subscriptions name their projects in messages (the live hub checks them).
  if (!who->projects.empty() && !route.projects_in_body && !head.upgrade) {
    auto project = head.target.query.find("project");
    const std::string named = project == head.target.query.end() ? "default" : project->second;
    if (!who->SeesProject(named)) {
      return HttpResponse::Error(403, "key '" + who->key_name + "' does not see project '" + named +
                                          "' (a project-bound key names its project: project=...)");
    }
  }
  return std::nullopt;
}

std::optional<HttpResponse> HttpServer::Impl::Refusal(const Head& head, auth::Principal* who) const {
  if (!HostAllowed(head.host)) {
    return HttpResponse::Error(403, "host '" + HostOfHeader(head.host) +
                                        "' is not a name of this server; add it to --allowed-hosts "
                                        "(a foreign name in Host is how DNS rebinding reaches a server)");
  }
  if ((head.upgrade || ChangesState(head.method)) && !OriginAllowed(head)) {
    return HttpResponse::Error(403, "requests from the page at " + head.origin +
                                        " may not change anything here (add the origin to --cors-origins "
                                        "to allow it)");
  }
  if (auto refusal = KeyRefusal(head, who)) return refusal;
  if (ChangesState(head.method) && head.has_body && !head.upgrade) {
    static const std::vector<std::string> kJson = {"application/json"};
    const RouteOptions& route = OptionsOf(head.method, head.target.path);
    const std::vector<std::string>& accepted = route.body_types.empty() ? kJson : route.body_types;
    std::string type = MediaType(head.content_type);
    if (std::find(accepted.begin(), accepted.end(), type) == accepted.end()) {
      std::string list;
      for (const std::string& t : accepted) list += (list.empty() ? "" : ", ") + t;
      return HttpResponse::Error(415, head.method + " " + head.target.path + " takes Content-Type " + list +
                                          ", not '" + (type.empty() ? "(none)" : type) + "'");
    }
  }
  return std::nullopt;
}

auth::AuditEntry HttpServer::Impl::AuditEntryOf(const std::string& method, const std::string& path,
                                                const std::multimap<std::string, std::string>& query,
                                                const auth::Principal& who, const std::string& remote,
                                                const HttpResponse& response) const {
  auth::AuditEntry e;
  e.key = who.key_name;
  e.remote = remote;
  e.action = method + " " + path;
  for (const char* name : {"project", "run", "id"}) {
    auto it = query.find(name);
    if (it != query.end()) e.target += (e.target.empty() ? "" : " ") + std::string(name) + "=" + it->second;
  }
  if (!response.audit_target.empty()) e.target += (e.target.empty() ? "" : " ") + response.audit_target;
  e.outcome = response.status;
  if (response.status >= 400 && response.body.size() < 1024) e.detail = response.body;
  while (!e.detail.empty() && e.detail.back() == '\n') e.detail.pop_back();
  return e;
}

void HttpServer::Impl::Dispatch(HttpRequest&& req, Responder responder) {
  if (options_.audit && ChangesState(req.method)) {
    // Answered only once its audit entry is durable: what was acknowledged is in the audit log.
    responder = [this, method = req.method, path = req.path, query = req.query, who = req.principal,
                 remote = req.remote, inner = std::move(responder)](HttpResponse response) mutable {
      auth::AuditEntry entry = AuditEntryOf(method, path, query, who, remote, response);
      options_.audit->Append(std::move(entry), [inner = std::move(inner), response = std::move(response)]() mutable {
        inner(std::move(response));
      });
    };
  }
  if (req.method == "OPTIONS" && CorsOrigin(req.Header("origin"))) {
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
  bool path_known = false;
  const HttpHandler* handler = FindHandler(req.method, req.path, &path_known);
  if (ForFallback(req.method, req.path)) {
    fallback_(std::move(req), std::move(responder));  // static files: no API key (they hold no data)
    return;
  }
  if (!handler) {
    responder(path_known ? HttpResponse::Error(405, "method " + req.method + " not allowed on " + req.path)
                         : HttpResponse::Error(404, "no endpoint at " + req.path));
    return;
  }
  if (Offloaded(req.method, req.path)) {
    // Routes never change after Start(): the handler outlives the task.
    net::post(query_pool_, [handler, req = std::move(req), responder = std::move(responder)]() mutable {
      (*handler)(std::move(req), std::move(responder));
    });
    return;
  }
  (*handler)(std::move(req), std::move(responder));
}

bool HttpServer::Impl::Offloaded(const std::string& method, const std::string& path) const {
  if (OptionsOf(method, path).offload) return true;
  if (routes_.contains(RouteKey{method, path})) return false;
  return std::any_of(offload_prefixes_.begin(), offload_prefixes_.end(),
                     [&](const RouteKey& key) { return key.method == method && path.starts_with(key.path); });
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
  impl_->routes_[Impl::RouteKey{method, path}] = std::move(handler);
  impl_->route_options_[Impl::RouteKey{method, path}] = std::move(options);
}

void HttpServer::RoutePrefix(const std::string& method, const std::string& prefix, HttpHandler handler,
                             RouteOptions options) {
  impl_->prefix_routes_[Impl::RouteKey{method, prefix}] = std::move(handler);
  if (options.offload) impl_->offload_prefixes_.insert(Impl::RouteKey{method, prefix});
}

void HttpServer::WebSocket(const std::string& path, WebSocketHandler handler) {
  impl_->websockets_[path] = std::move(handler);
}

void HttpServer::Fallback(HttpHandler handler) { impl_->fallback_ = std::move(handler); }

Status HttpServer::Start() { return impl_->Start(); }

Result<bool> HttpServer::ReloadTls() { return impl_->ReloadTls(); }

uint16_t HttpServer::port() const {
  beast::error_code ec;
  auto endpoint = impl_->acceptor_.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

void HttpServer::Stop() { impl_->Stop(); }

}  // namespace trainwatch::api
