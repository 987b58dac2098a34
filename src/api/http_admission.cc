#include "api/http_admission.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/strings.h"

namespace trainwatch::api {
namespace {

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

// An IPv6 address (with or without a "%zone"), or a dotted-quad IPv4 address: what cannot be
// rebound to another server.
bool IsIpAddress(const std::string& host) {
  const char* text = host.c_str();  // up to the first NUL, as a socket API reads it
  unsigned char bytes[sizeof(in6_addr)];
  std::string address(text, std::min(std::strlen(text), std::string_view(text).find('%')));
  if (inet_pton(AF_INET6, address.c_str(), bytes) == 1) return true;  // any zone is accepted
  return inet_pton(AF_INET, text, bytes) == 1;
}

// "application/json" of "Application/JSON; charset=utf-8".
std::string MediaType(std::string_view content_type) {
  return ToLowerAscii(TrimBlanks(content_type.substr(0, content_type.find(';'))));
}

}  // namespace

bool ChangesState(std::string_view method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

std::vector<std::string> MachineHostNames() {
  char hostname[256] = {};
  if (gethostname(hostname, sizeof hostname - 1) != 0 || hostname[0] == '\0') return {};
  std::string name = hostname;
  return {name, name.substr(0, name.find('.'))};
}

HttpAdmission::HttpAdmission(AdmissionOptions options) : options_(std::move(options)) {
  for (const std::string& entry : options_.allowed_hosts) {
    std::string name = ToLowerAscii(TrimBlanks(entry));
    if (name == "*")
      any_host_ = true;
    else if (name.starts_with("*."))
      host_suffixes_.push_back(name.substr(1));
    else if (!name.empty())
      host_names_.insert(HostOfHeader(name));
  }
  for (const std::string& name : options_.machine_names) host_names_.insert(ToLowerAscii(name));
}

bool HttpAdmission::HostAllowed(std::string_view host_header) const {
  if (any_host_ || host_header.empty()) return true;  // no Host: not a browser
  std::string host = HostOfHeader(host_header);
  if (host.empty()) return false;
  if (IsIpAddress(host)) return true;  // an IP address cannot be rebound to another server
  if (host == "localhost" || host.ends_with(".localhost") || host_names_.contains(host))
    return true;
  return std::any_of(host_suffixes_.begin(), host_suffixes_.end(),
                     [&](const std::string& suffix) { return host.ends_with(suffix); });
}

bool HttpAdmission::CorsOrigin(std::string_view origin) const {
  if (origin.empty()) return false;
  return std::any_of(options_.cors_origins.begin(), options_.cors_origins.end(),
                     [&](const std::string& allowed) { return EqualsIgnoreCase(allowed, origin); });
}

bool HttpAdmission::OriginAllowed(const RequestHead& head) const {
  if (head.origin.empty()) return true;  // not sent by a browser
  if (CorsOrigin(head.origin)) return true;
  std::string_view origin = head.origin;
  size_t scheme_end = origin.find("://");
  if (scheme_end == std::string_view::npos) return false;  // "null": a sandboxed or file page
  return !head.host.empty() && EqualsIgnoreCase(origin.substr(scheme_end + 3), head.host);
}

namespace {

// The key in an Authorization header: "Bearer <key>", or as InfluxDB clients send it
// (docs/influx.md), "Token <key>" or Basic with the key as the password (the user name is not
// checked). `storage` holds a decoded Basic password. Empty when the header carries none of these.
std::string_view PresentedKey(const std::string& authorization, std::string* storage) {
  std::string_view a = authorization;
  if (a.starts_with("Bearer ")) return a.substr(7);
  if (a.starts_with("Token ")) return a.substr(6);
  if (!a.starts_with("Basic ")) return {};
  std::string_view b64 = a.substr(6);
  if (b64.empty() || b64.size() % 4 != 0 || b64.size() > 4096) return {};
  std::string decoded(b64.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                          reinterpret_cast<const unsigned char*>(b64.data()),
                          static_cast<int>(b64.size()));
  if (n < 0) return {};
  size_t len = static_cast<size_t>(n);
  for (size_t i = b64.size(); i > 0 && b64[i - 1] == '='; --i) --len;  // DecodeBlock counts padding
  decoded.resize(len);
  size_t colon = decoded.find(':');
  if (colon == std::string::npos) return {};
  *storage = decoded.substr(colon + 1);
  return *storage;
}

}  // namespace

std::optional<HttpResponse> HttpAdmission::KeyRefusal(const RequestHead& head,
                                                      const RouteMatch& route,
                                                      auth::Principal* who) const {
  *who = auth::Principal{};
  const std::string& path = head.target.path;
  if (!options_.keys || !options_.keys->enabled()) return std::nullopt;
  if (path == "/healthz" || path == "/ping" || head.method == "OPTIONS" ||
      (!head.upgrade && route.fallback)) {
    return std::nullopt;  // data-free answers
  }
  std::string basic_password;
  std::string_view sent = PresentedKey(head.authorization, &basic_password);
  const auto& query = head.target.query;
  auto token = query.find("token");
  if (sent.empty() && token == query.end() && query.contains("key")) {
    return HttpResponse::Error(
        401,
        "a key is not accepted in a URL (?key=): send it as Authorization: Bearer <key>, "
        "or, where a browser cannot send a header (WebSocket, <img>), a short-lived "
        "?token= from POST /api/v1/tokens");
  }
  // Where a browser cannot send a header, a short-lived token stands in for its key: reads only.
  const bool by_token = sent.empty() && token != query.end();
  if (by_token && head.method != "GET" && head.method != "HEAD" && !head.upgrade) {
    return HttpResponse::Error(
        401,
        "a token (?token=) is good only for GET, HEAD and WebSocket upgrades; send "
        "the key as Authorization: Bearer <key>");
  }
  Result<auth::Principal> principal =
      !by_token ? options_.keys->Authenticate(sent)
      : options_.tokens
          ? options_.tokens->Authenticate(token->second)
          : Result<auth::Principal>(Status::Unauthenticated("this server issues no tokens"));
  if (!principal.ok()) return HttpResponse::Error(401, principal.status().message());
  *who = std::move(*principal);
  if (!who->allow_from.empty() && !who->allow_from.Contains(head.remote)) {
    return HttpResponse::Error(403,
                               "key '" + who->key_name + "' may not be used from " + head.remote);
  }
  const RouteOptions& options = *route.options;
  const auth::Scope needed =
      options.scope.value_or(ChangesState(head.method) ? auth::Scope::kWrite : auth::Scope::kRead);
  if (!who->Allows(needed)) {
    return HttpResponse::Error(403, "key '" + who->key_name + "' has scope " +
                                        std::string(auth::ScopeName(who->scope)) + "; " +
                                        head.method + " " + path + " needs " +
                                        std::string(auth::ScopeName(needed)));
  }
  // WebSocket subscriptions name their projects in messages (the live hub checks them).
  if (!who->projects.empty() && !options.projects_in_body && !head.upgrade) {
    auto project = query.find("project");
    const std::string named = project == query.end() ? "default" : project->second;
    if (!who->SeesProject(named)) {
      return HttpResponse::Error(403, "key '" + who->key_name + "' does not see project '" + named +
                                          "' (a project-bound key names its project: project=...)");
    }
  }
  return std::nullopt;
}

std::optional<HttpResponse> HttpAdmission::Refusal(const RequestHead& head, const RouteMatch& route,
                                                   auth::Principal* who) const {
  if (!HostAllowed(head.host)) {
    return HttpResponse::Error(
        403, "host '" + HostOfHeader(head.host) +
                 "' is not a name of this server; add it to --allowed-hosts "
                 "(a foreign name in Host is how DNS rebinding reaches a server)");
  }
  if ((head.upgrade || ChangesState(head.method)) && !OriginAllowed(head)) {
    return HttpResponse::Error(
        403, "requests from the page at " + head.origin +
                 " may not change anything here (add the origin to --cors-origins "
                 "to allow it)");
  }
  if (auto refusal = KeyRefusal(head, route, who)) return refusal;
  if (ChangesState(head.method) && head.has_body && !head.upgrade) {
    static const std::vector<std::string> kJson = {"application/json"};
    const std::vector<std::string>& accepted =
        route.options->body_types.empty() ? kJson : route.options->body_types;
    std::string type = MediaType(head.content_type);
    if (std::find(accepted.begin(), accepted.end(), type) == accepted.end()) {
      std::string list;
      for (const std::string& t : accepted) list += (list.empty() ? "" : ", ") + t;
      return HttpResponse::Error(415, head.method + " " + head.target.path +
                                          " takes Content-Type " + list + ", not '" +
                                          (type.empty() ? "(none)" : type) + "'");
    }
  }
  return std::nullopt;
}

}  // namespace trainwatch::api
