// HttpRouter: which handler answers a request, looked up once per request from its method and path:
// exact routes first, then path prefixes; each route with its options. Also the WebSocket endpoints
// and the one fallback that serves other GET/HEAD paths outside /api (the dashboard's static files).
//
// Filled before the server starts and only read after: then thread-safe, and the pointers a lookup
// returns stay valid as long as the router.
#pragma once

#include <map>
#include <set>
#include <string>

#include "api/http_server.h"

namespace trainwatch::api {

// What the router knows of a request's method and path.
struct RouteMatch {
  // The route's handler; null when no route takes this method at this path.
  const HttpHandler* handler = nullptr;
  // The route's options; the defaults when there is no handler. Never null.
  const RouteOptions* options = nullptr;
  // Some route, of any method, serves this path: a 405 rather than a 404 when there is no handler.
  bool path_known = false;
  // The fallback serves it: a GET or HEAD of a path that no route serves and that is neither `/api`
  // nor under `/api/`, on a router that has a fallback. Such requests need no key (static files).
  bool fallback = false;
};

class HttpRouter {
 public:
  HttpRouter() = default;
  HttpRouter(const HttpRouter&) = delete;
  HttpRouter& operator=(const HttpRouter&) = delete;

  // A route for exactly `path`; registering the same method and path again replaces it.
  void Route(const std::string& method, const std::string& path, HttpHandler handler, RouteOptions options = {});
  // A route for every path that starts with `prefix` and has no exact route of its method. When
  // several prefixes of a method match, the lexicographically smallest wins.
  void RoutePrefix(const std::string& method, const std::string& prefix, HttpHandler handler,
                   RouteOptions options = {});
  void WebSocket(const std::string& path, WebSocketHandler handler);
  void Fallback(HttpHandler handler);

  RouteMatch Find(const std::string& method, const std::string& path) const;
  // The WebSocket endpoint at exactly `path`; null when there is none.
  const WebSocketHandler* FindWebSocket(const std::string& path) const;
  // Empty when there is no fallback.
  const HttpHandler& fallback() const { return fallback_; }

 private:
  struct Key {
    std::string method, path;
    auto operator<=>(const Key&) const = default;
  };
  struct Entry {
    HttpHandler handler;
    RouteOptions options;
  };

  std::map<Key, Entry> routes_;
  std::set<std::string> route_paths_;   // the paths of routes_, any method
  std::map<Key, Entry> prefix_routes_;  // Key::path is the prefix
  std::map<std::string, WebSocketHandler> websockets_;
  HttpHandler fallback_;  // may be empty
};

}  // namespace trainwatch::api
