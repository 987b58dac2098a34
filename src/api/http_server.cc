// The only translation unit that includes Beast.
#include <utility>  // before Asio: GCC 12 + C++20 needs std::exchange declared first

#include "api/http_server.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "api/http_target.h"

namespace trainwatch::api {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

void ParseTarget(std::string_view target, HttpRequest* req) {
  RequestTarget parsed = api::ParseTarget(target);
  req->path = std::move(parsed.path);
  req->query = std::move(parsed.query);
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
        requests_(metrics.AddCounter("trainwatch_http_requests_total", "HTTP requests served.")),
        errors_(metrics.AddCounter("trainwatch_http_errors_total", "HTTP responses with status >= 400.")),
        latency_(metrics.AddHistogram("trainwatch_http_request_duration_seconds",
                                      "Time from a request read to its response queued.")) {
    metrics.AddGauge("trainwatch_http_connections", "Open HTTP and WebSocket connections.",
                     [this] { return static_cast<double>(connections_.load()); });
  }

  struct RouteKey {
    std::string method, path;
    auto operator<=>(const RouteKey&) const = default;
  };

  class Session;
  class WsSession;

  Status Start();
  void Stop();
  void Accept();
  void Dispatch(HttpRequest&& req, Responder responder);
  bool Authorized(const HttpRequest& req) const;

  HttpServerOptions options_;
  Logger& logger_;
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  std::vector<std::thread> threads_;
  std::map<RouteKey, HttpHandler> routes_;
  std::map<RouteKey, HttpHandler> prefix_routes_;  // RouteKey::path is the prefix
  std::map<std::string, WebSocketHandler> websockets_;
  HttpHandler fallback_;  // may be empty
  std::atomic<int> connections_{0};
  std::atomic<uint64_t> next_peer_id_{1};
  std::atomic<bool> stopped_{false};
  Counter& requests_;
  Counter& errors_;
  Histogram& latency_;
};

// One WebSocket connection.
class HttpServer::Impl::WsSession : public WebSocketPeer,
                                    public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(Impl& server, tcp::socket&& socket, const WebSocketHandler& handler)
      : server_(server), ws_(std::move(socket)), handler_(handler), id_(server.next_peer_id_++) {
    ++server_.connections_;
  }
  ~WsSession() override { --server_.connections_; }

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

  Impl& server_;
  websocket::stream<beast::tcp_stream> ws_;
  const WebSocketHandler& handler_;
  const uint64_t id_;
  beast::flat_buffer buffer_;
  std::deque<std::string> queue_;  // only touched on the strand
  size_t queued_bytes_ = 0;
  bool closed_ = false;
};

// One HTTP connection: reads requests one after another (keep-alive), answers each in order.
class HttpServer::Impl::Session : public std::enable_shared_from_this<Session> {
 public:
  static constexpr size_t kReadBufferBytes = 64 << 10;

  Session(Impl& server, tcp::socket&& socket) : server_(server), stream_(std::move(socket)) {
    ++server_.connections_;
    // Beast sizes each socket read by the buffer's spare room: without this, 512 bytes at a time.
    buffer_.reserve(kReadBufferBytes);
  }
  ~Session() { --server_.connections_; }

  void Start() { net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); }); }

 private:
  void Read() {
    head_ = false;
    parser_.emplace();
    parser_->body_limit(server_.options_.max_body_bytes);
    parser_->header_limit(64 * 1024);
    stream_.expires_after(std::chrono::seconds(server_.options_.read_timeout_seconds));
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::OnHeader, shared_from_this()));
  }

  // Clients that sent `Expect: 100-continue` (curl, for bodies over 1 MiB) wait for a go-ahead
  // before the body; answer at once instead of letting them time out.
  void OnHeader(beast::error_code ec, size_t) {
    if (ec || parser_->is_done()) {
      OnRead(ec, 0);
      return;
    }
    auto expect = parser_->get().find(http::field::expect);
    if (expect != parser_->get().end() && beast::iequals(expect->value(), "100-continue")) {
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
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, size_t) {
    if (ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == beast::error::timeout) {
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
    head_ = req.method() == http::verb::head;
    version_ = req.version();
    if (websocket::is_upgrade(req)) {
      HttpRequest probe;
      ParseTarget(std::string_view(req.target().data(), req.target().size()), &probe);
      if (auto auth = req.find(http::field::authorization); auth != req.end()) {
        probe.headers["authorization"] = std::string(auth->value());
      }
      if (!server_.Authorized(probe)) {
        RespondAndClose(HttpResponse::Error(401, "missing or wrong API key"));
        return;
      }
      auto it = server_.websockets_.find(probe.path);
      if (it == server_.websockets_.end()) {
        RespondAndClose(HttpResponse::Error(404, "no WebSocket endpoint at " + probe.path));
        return;
      }
      stream_.expires_never();
      std::make_shared<WsSession>(server_, stream_.release_socket(), it->second)->Run(std::move(req));
      return;
    }
    HttpRequest request;
    request.method = std::string(req.method_string());
    ParseTarget(std::string_view(req.target().data(), req.target().size()), &request);
    for (const auto& field : req) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request.headers[name] = std::string(field.value());
    }
    request.body = std::move(req.body());
    beast::error_code ignored;
    auto endpoint = stream_.socket().remote_endpoint(ignored);
    request.remote = endpoint.address().to_string();
    started_ = std::chrono::steady_clock::now();
    stream_.expires_never();  // the handler may take a while (durable ack); no read is pending
    server_.Dispatch(std::move(request), [self = shared_from_this()](HttpResponse response) {
      net::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
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
    // 1xx, 204 and 304 never carry a body (Beast throws if asked to); HEAD gets the headers alone.
    int status = response.status;
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

  template <class Message>
  static void SetFields(Message& res, const HttpResponse& response) {
    res.set(http::field::server, "trainwatch");
    if (!response.content_type.empty()) res.set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) res.set(name, value);
  }

  template <class Body>
  void Send(std::shared_ptr<http::response<Body>> res, bool close) {
    stream_.expires_after(std::chrono::seconds(server_.options_.read_timeout_seconds));
    http::async_write(stream_, *res, [self = shared_from_this(), res, close](beast::error_code ec, size_t) {
      if (ec || close) {
        self->Shutdown();
        return;
      }
      self->Read();
    });
  }

  void Shutdown() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
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
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    threads_.emplace_back([this] { ioc_.run(); });
  }
  return Status::Ok();
}

void HttpServer::Impl::Accept() {
  acceptor_.async_accept(net::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
    if (stopped_) return;
    if (!ec) {
      if (connections_.load() >= options_.max_connections) {
        // Refuse politely: a one-shot 503 and close, without reading the request.
        auto session_socket = std::make_shared<tcp::socket>(std::move(socket));
        static const std::string kBody = "{\"error\":\"too many connections; retry later\"}\n";
        static const std::string kBusy =
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: "
            "close\r\nContent-Length: " + std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
        net::async_write(*session_socket, net::buffer(kBusy),
                         [session_socket](beast::error_code, size_t) {});
      } else {
        std::make_shared<Session>(*this, std::move(socket))->Start();
      }
    }
    Accept();
  });
}

bool HttpServer::Impl::Authorized(const HttpRequest& req) const {
  if (options_.api_key.empty() || req.path == "/healthz") return true;
  std::string auth = req.Header("authorization");
  return auth == "Bearer " + options_.api_key || req.Param("key") == options_.api_key;
}

void HttpServer::Impl::Dispatch(HttpRequest&& req, Responder responder) {
  auto it = routes_.find(RouteKey{req.method, req.path});
  const HttpHandler* handler = it != routes_.end() ? &it->second : nullptr;
  bool path_known = handler != nullptr;
  for (auto r = routes_.begin(); !path_known && r != routes_.end(); ++r) {
    path_known = r->first.path == req.path;
  }
  for (const auto& [key, prefix_handler] : prefix_routes_) {
    if (path_known && handler) break;
    if (!req.path.starts_with(key.path)) continue;
    path_known = true;
    if (!handler && key.method == req.method) handler = &prefix_handler;
  }
  bool api_path = req.path == "/api" || req.path.starts_with("/api/");
  if (!path_known && !api_path && fallback_ && (req.method == "GET" || req.method == "HEAD")) {
    fallback_(std::move(req), std::move(responder));  // static files: no API key (they hold no data)
    return;
  }
  if (!Authorized(req)) {
    responder(HttpResponse::Error(401, "missing or wrong API key (Authorization: Bearer <key>)"));
    return;
  }
  if (!handler) {
    responder(path_known ? HttpResponse::Error(405, "method " + req.method + " not allowed on " + req.path)
                         : HttpResponse::Error(404, "no endpoint at " + req.path));
    return;
  }
  (*handler)(std::move(req), std::move(responder));
}

void HttpServer::Impl::Stop() {
  if (stopped_.exchange(true)) return;
  net::post(ioc_, [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
  ioc_.stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

HttpServer::HttpServer(HttpServerOptions options, Logger& logger, MetricsRegistry& metrics)
    : impl_(std::make_unique<Impl>(std::move(options), logger, metrics)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Route(const std::string& method, const std::string& path, HttpHandler handler) {
  impl_->routes_[Impl::RouteKey{method, path}] = std::move(handler);
}

void HttpServer::RoutePrefix(const std::string& method, const std::string& prefix, HttpHandler handler) {
  impl_->prefix_routes_[Impl::RouteKey{method, prefix}] = std::move(handler);
}

void HttpServer::WebSocket(const std::string& path, WebSocketHandler handler) {
  impl_->websockets_[path] = std::move(handler);
}

void HttpServer::Fallback(HttpHandler handler) { impl_->fallback_ = std::move(handler); }

Status HttpServer::Start() { return impl_->Start(); }

uint16_t HttpServer::port() const {
  beast::error_code ec;
  auto endpoint = impl_->acceptor_.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

void HttpServer::Stop() { impl_->Stop(); }

}  // namespace trainwatch::api
