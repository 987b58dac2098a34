// The only translation unit that includes Beast.
#include <utility>  // before Asio: GCC 12 + C++20 needs std::exchange declared first

#include "api/http_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
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

#include "api/connection_registry.h"
#include "api/http_admission.h"
#include "api/http_router.h"
#include "api/http_target.h"
#include "api/json_writer.h"
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
  std::string body = "{\"error\":";
  AppendString(&body, message);
  body += "}\n";
  return Json(status, std::move(body));
}
class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, Logger& logger, MetricsRegistry& metrics)
      : options_(std::move(options)),
        logger_(logger),
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
      metrics.AddGauge("trainwatch_tls_certificate_expiry_timestamp_seconds",
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
                                const std::multimap<std::string, std::string>& query, const auth::Principal& who,
                                const std::string& remote, const HttpResponse& response) const;

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
  std::string last_tls_error_;  // only touched by ReloadTls callers, one at a time (tls_mu_)
  std::mutex tls_mu_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> next_peer_id_{1};
  std::atomic<bool> stopped_{false};
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
    if (!server_.registry_.SetWaiting(*slot_, true)) return;
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
    if (!server_.registry_.SetWaiting(*slot_, true)) return;
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
    if (!server_.registry_.SetWaiting(*slot_, false)) return;  // closed to make room
    if (ec) {
      OnRead(ec, 0);
      return;
    }
    const auto& header = parser_->get();
    request_head_ = RequestHead{};
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
    route_ = server_.router_.Find(request_head_.method, request_head_.target.path);
    if (server_.admission_.CorsOrigin(request_head_.origin)) cors_origin_ = request_head_.origin;
    if (auto refusal = server_.admission_.Refusal(request_head_, route_, &principal_)) {
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
      const WebSocketHandler* websocket = server_.router_.FindWebSocket(request_head_.target.path);
      if (!websocket) {
        RespondAndClose(HttpResponse::Error(404, "no WebSocket endpoint at " + request_head_.target.path));
        return;
      }
      tcp().expires_never();
      if constexpr (kTls) {
        std::make_shared<WsSession<TlsStream>>(server_, std::move(stream_), std::move(tls_context_), std::move(slot_),
                                               *websocket, std::move(principal_))
            ->Run(std::move(req));
      } else {
        std::make_shared<WsSession<PlainStream>>(server_, stream_.release_socket(), nullptr, std::move(slot_),
                                                 *websocket, std::move(principal_))
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
    server_.Dispatch(std::move(request), route_, [self = shared_from_this()](HttpResponse response) {
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
  RequestHead request_head_;
  RouteMatch route_;  // request_head_'s
  auth::Principal principal_;
  std::string cors_origin_;  // the request's Origin when it is one of cors_origins
  bool keep_alive_ = false;
  bool head_ = false;  // the request being answered is a HEAD
  unsigned version_ = 11;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

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
    if (ec == beast::errc::too_many_files_open || ec == beast::errc::too_many_files_open_in_system) {
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
  std::shared_ptr<Slot> slot = registry_.Register(peer.address().to_string());
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
  registry_.Attach(*slot, session);
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

void HttpServer::Impl::Dispatch(HttpRequest&& req, const RouteMatch& route, Responder responder) {
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
    router_.fallback()(std::move(req), std::move(responder));  // static files: no API key (they hold no data)
    return;
  }
  const HttpHandler* handler = route.handler;
  if (!handler) {
    responder(route.path_known ? HttpResponse::Error(405, "method " + req.method + " not allowed on " + req.path)
                         : HttpResponse::Error(404, "no endpoint at " + req.path));
    return;
  }
  if (route.options->offload) {
    // Routes never change after Start(): the handler outlives the task.
    net::post(query_pool_, [handler, req = std::move(req), responder = std::move(responder)]() mutable {
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

void HttpServer::RoutePrefix(const std::string& method, const std::string& prefix, HttpHandler handler,
                             RouteOptions options) {
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