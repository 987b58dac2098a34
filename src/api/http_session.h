// The connections of HttpServer::Impl: HTTP (Session) and WebSocket (WsSession), each over TCP or
// TLS. Private to http_server.cc.
#pragma once

#include "api/http_server_impl.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <type_traits>

#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include "api/content_coding.h"
#include "api/http_target.h"
#include "common/strings.h"

namespace trainwatch::api {

namespace http = beast::http;
namespace websocket = beast::websocket;

// Sent with every answer over TLS: browsers come back over https only (a year; no subdomains,
// which a self-hosted server cannot speak for).
inline constexpr const char* kHsts = "max-age=31536000";

// How long a TLS connection waits for the peer's close_notify before it is closed anyway.
inline constexpr int kTlsShutdownSeconds = 5;

// Sent with every answer; the dashboard's pages load nothing from elsewhere and are never framed.
inline constexpr std::pair<const char*, const char*> kSecurityHeaders[] = {
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"X-Frame-Options", "DENY"},
    {"Content-Security-Policy",
     "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' "
     "data: blob:; "
     "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action "
     "'self'; "
     "frame-ancestors 'none'"},
};

// One WebSocket connection, over TCP or TLS: `Next` is what the upgraded HTTP connection spoke on
// (a TCP socket, or the TLS stream with its session).
template <class Stream>
class HttpServer::Impl::WsSession : public WebSocketPeer,
                                    public std::enable_shared_from_this<WsSession<Stream>> {
 public:
  template <class Next>
  WsSession(Impl& server, Next&& next, std::shared_ptr<net::ssl::context> tls_context,
            std::shared_ptr<Slot> slot, const WebSocketHandler& handler, auth::Principal principal)
      : server_(server),
        tls_context_(std::move(tls_context)),
        ws_(std::forward<Next>(next)),
        slot_(std::move(slot)),
        handler_(handler),
        id_(server.next_peer_id_++),
        principal_(std::move(principal)) {}
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
class HttpServer::Impl::Session : public Connection,
                                  public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr size_t kReadBufferBytes = 64 << 10;
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  // `tls_context`: the server's TLS context when the connection was accepted (null over TCP).
  Session(Impl& server, tcp::socket&& socket, std::shared_ptr<Slot> slot,
          std::shared_ptr<net::ssl::context> tls_context)
      : server_(server),
        tls_context_(std::move(tls_context)),
        stream_(MakeStream(std::move(socket), tls_context_.get())),
        slot_(std::move(slot)) {
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
    beast::async_detect_ssl(tcp(), buffer_,
                            beast::bind_front_handler(&Session::OnDetected, shared_from_this()));
  }

  void OnDetected(beast::error_code ec, bool tls) {
    if (ec) {
      if (ec != net::error::eof && ec != net::error::operation_aborted)
        server_.tls_handshake_failures_.Add();
      tcp().close();
      return;
    }
    if (!tls) {
      server_.tls_handshake_failures_.Add();
      static const std::string kBody =
          "{\"error\":\"this server speaks HTTPS only: use https:// (and wss:// for "
          "WebSockets)\"}\n";
      static const std::string kAnswer =
          "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: "
          "close\r\nContent-Length: " +
          std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
      net::async_write(tcp(), net::buffer(kAnswer),
                       [self = shared_from_this()](beast::error_code, size_t) {
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
      server_.logger_.Debug("TLS handshake failed",
                            {{"client", slot_->address}, {"error", ec.message()}});
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
    request_head_.target =
        ParseTarget(std::string_view(header.target().data(), header.target().size()));
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
        auth::AuditEntry entry =
            server_.AuditEntryOf(request_head_.method, request_head_.target.path,
                                 request_head_.target.query, principal_, slot_->address, *refusal);
        server_.options_.audit->Append(
            std::move(entry), [self = shared_from_this(), refusal = *refusal]() mutable {
              net::post(self->tcp().get_executor(), [self, refusal = std::move(refusal)]() mutable {
                self->RespondAndClose(std::move(refusal));
              });
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
    if (ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == beast::error::timeout ||
        ec == net::error::operation_aborted) {
      Shutdown();
      return;
    }
    if (ec == http::error::body_limit) {
      RespondAndClose(HttpResponse::Error(413, "request body exceeds the limit of " +
                                                   std::to_string(server_.options_.max_body_bytes) +
                                                   " bytes"));
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
        RespondAndClose(
            HttpResponse::Error(404, "no WebSocket endpoint at " + request_head_.target.path));
        return;
      }
      tcp().expires_never();
      if constexpr (kTls) {
        std::make_shared<WsSession<TlsStream>>(server_, std::move(stream_), std::move(tls_context_),
                                               std::move(slot_), *websocket, std::move(principal_))
            ->Run(std::move(req));
      } else {
        std::make_shared<WsSession<PlainStream>>(server_, stream_.release_socket(), nullptr,
                                                 std::move(slot_), *websocket,
                                                 std::move(principal_))
            ->Run(std::move(req));
      }
      return;
    }
    HttpRequest request;
    request.method = std::move(request_head_.method);
    request.path = std::move(request_head_.target.path);
    request.query = std::move(request_head_.target.query);
    for (const auto& field : req)
      request.headers[ToLowerAscii(std::string_view(
          field.name_string().data(), field.name_string().size()))] = std::string(field.value());
    request.body = std::move(req.body());
    request.remote = slot_->address;
    request.principal = std::move(principal_);
    started_ = std::chrono::steady_clock::now();
    tcp().expires_never();  // the handler may take a while (durable ack); no read is pending
    // Compressed where the handler answers (a query thread for store reads), not on the I/O thread.
    const bool gzip = !head_ && AcceptsGzip(request.Header("accept-encoding"));
    server_.Dispatch(
        std::move(request), route_, [self = shared_from_this(), gzip](HttpResponse response) {
          if (gzip) GzipAnswer(&response);
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
      auto vary = std::find_if(response.headers.begin(), response.headers.end(),
                               [](const auto& header) { return header.first == "Vary"; });
      if (vary == response.headers.end()) {
        response.headers.emplace_back("Vary", "Origin");
      } else {
        vary->second += ", Origin";
      }
    }
    // 1xx, 204 and 304 never carry a body (Beast throws if asked to); HEAD gets the headers alone.
    int status = response.status;
    if (response.stream && !head_ && status >= 200 && status != 204 && status != 304) {
      WriteStreamed(std::move(response), close);
      return;
    }
    if (head_ || status < 200 || status == 204 || status == 304) {
      auto res = std::make_shared<http::response<http::empty_body>>(
          static_cast<http::status>(status), version_ ? version_ : 11);
      SetFields(*res, response);
      if (head_ && status >= 200 && status != 204 && status != 304)
        res->content_length(response.body.size());
      res->keep_alive(!close);
      Send(std::move(res), close);
      return;
    }
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(status), version_ ? version_ : 11);
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
    auto res = std::make_shared<http::response<http::empty_body>>(
        static_cast<http::status>(response.status), version_ ? version_ : 11);
    SetFields(*res, response);
    res->chunked(true);
    res->keep_alive(!close);
    auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    auto producer = std::make_shared<Producer>(std::move(response.stream));
    tcp().expires_after(std::chrono::seconds(server_.options_.read_timeout_seconds));
    http::async_write_header(stream_, *serializer,
                             [self = shared_from_this(), res, serializer, producer, close](
                                 beast::error_code ec, size_t) {
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

  void WritePiece(std::shared_ptr<Producer> producer, std::shared_ptr<std::string> piece,
                  StreamStep step, bool close) {
    if (step == StreamStep::kFailed) {
      tcp().close();  // no terminating chunk: the client sees the answer is incomplete
      return;
    }
    auto after = [self = shared_from_this(), producer, piece, step, close](beast::error_code ec,
                                                                           size_t) {
      if (ec) return self->Shutdown();
      if (step == StreamStep::kMore) return self->ProducePiece(producer, close);
      net::async_write(self->stream_, http::make_chunk_last(),
                       [self, close](beast::error_code ec, size_t) {
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
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, close](beast::error_code ec, size_t) {
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
      stream_.async_shutdown(
          [self = shared_from_this()](beast::error_code) { self->tcp().close(); });
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

}  // namespace trainwatch::api
