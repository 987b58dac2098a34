#include "api/http_router.h"

namespace trainwatch::api {

void HttpRouter::Route(const std::string& method, const std::string& path, HttpHandler handler,
                       RouteOptions options) {
  routes_[Key{method, path}] = Entry{std::move(handler), std::move(options)};
  route_paths_.insert(path);
}

void HttpRouter::RoutePrefix(const std::string& method, const std::string& prefix, HttpHandler handler,
                             RouteOptions options) {
  prefix_routes_[Key{method, prefix}] = Entry{std::move(handler), std::move(options)};
}

void HttpRouter::WebSocket(const std::string& path, WebSocketHandler handler) {
  websockets_[path] = std::move(handler);
}

void HttpRouter::Fallback(HttpHandler handler) { fallback_ = std::move(handler); }

RouteMatch HttpRouter::Find(const std::string& method, const std::string& path) const {
  static const RouteOptions kDefaults;
  RouteMatch match;
  match.options = &kDefaults;
  if (auto it = routes_.find(Key{method, path}); it != routes_.end()) {
    match.handler = &it->second.handler;
    match.options = &it->second.options;
  }
  match.path_known = match.handler != nullptr || route_paths_.contains(path);
  for (const auto& [key, entry] : prefix_routes_) {
    if (match.path_known && match.handler) break;
    if (!path.starts_with(key.path)) continue;
    match.path_known = true;
    if (!match.handler && key.method == method) {
      match.handler = &entry.handler;
      match.options = &entry.options;
    }
  }
  const bool api_path = path == "/api" || path.starts_with("/api/");
  match.fallback = !match.path_known && !api_path && fallback_ && (method == "GET" || method == "HEAD");
  return match;
}

const WebSocketHandler* HttpRouter::FindWebSocket(const std::string& path) const {
  auto it = websockets_.find(path);
  return it == websockets_.end() ? nullptr : &it->second;
}

}  // namespace trainwatch::api
