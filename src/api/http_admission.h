// HttpAdmission: everything decided on a request's header, before any byte of its body is read (or
// `100 Continue` sent): the Host (DNS rebinding), the Origin of state-changing requests and
// WebSocket upgrades, the key or token with the route's scope and projects, and the route's body
// type. docs/security.md describes the rules; HttpServerOptions holds their settings. Thread-safe
// (const after construction).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_router.h"
#include "api/http_server.h"
#include "api/http_target.h"
#include "auth/key_store.h"
#include "auth/token_issuer.h"

namespace trainwatch::api {

// What admission reads of a request: its request line and a few headers.
struct RequestHead {
  std::string method;
  RequestTarget target;
  std::string host, origin, authorization, content_type;  // header values; empty when absent
  std::string remote;  // the client's address
  bool has_body = false;
  bool upgrade = false;  // a WebSocket upgrade
};

struct AdmissionOptions {
  // Host names accepted besides IP addresses, localhost and machine_names: "name", "*.domain"
  // (any name that ends with ".domain"), or "*" (any Host).
  std::vector<std::string> allowed_hosts;
  // Origins ("https://app.example") besides this server's own that may change state and open
  // WebSockets; they also get CORS headers.
  std::vector<std::string> cors_origins;
  // This machine's names (MachineHostNames()), accepted in Host.
  std::vector<std::string> machine_names;
  // Null or empty: every request is admitted without a key (as an admin without a name).
  const auth::KeyStore* keys = nullptr;
  // Checks `?token=`; null: no tokens are accepted.
  const auth::TokenIssuer* tokens = nullptr;
};

// True for the methods that may change state (all but GET, HEAD and OPTIONS).
bool ChangesState(std::string_view method);

// This machine's host name, and its first label when it has dots; empty when it has none.
std::vector<std::string> MachineHostNames();

class HttpAdmission {
 public:
  explicit HttpAdmission(AdmissionOptions options);

  // The answer that refuses the request before its body is read, if any: a 403 for a foreign Host
  // or Origin, then the key's refusal (KeyRefusal), then a 415 for a body type the route does not
  // take. Otherwise none, and *who is the request's principal. `route` is the request's match.
  std::optional<HttpResponse> Refusal(const RequestHead& head, const RouteMatch& route, auth::Principal* who) const;

  // The refusal of the request's key or token, if any: a 401 for a missing, unknown or expired
  // key, a key in the URL (?key=) or a token (?token=) on anything but GET, HEAD and WebSocket
  // upgrades; a 403 for a key used from an address it does not allow, without the route's scope
  // (RouteOptions::scope, else read for GET/HEAD and write for the rest), or naming (project=,
  // "default" when absent) a project it does not see — unless the route takes its projects in the
  // body, or the request is an upgrade (the live hub checks subscriptions). /healthz, OPTIONS and
  // what the fallback serves need no key. *who is the principal it authenticates as: an admin
  // without a name when the server has no keys, and whatever was found before a refusal.
  std::optional<HttpResponse> KeyRefusal(const RequestHead& head, const RouteMatch& route, auth::Principal* who) const;

  // Whether a Host header value names this server (an empty one does: not a browser).
  bool HostAllowed(std::string_view host_header) const;
  // Whether a request may come from its Origin: none, one of cors_origins, or this server's own
  // (the scheme's host and port equal to the Host header).
  bool OriginAllowed(const RequestHead& head) const;
  // Whether `origin` is one of cors_origins (compared ignoring case).
  bool CorsOrigin(std::string_view origin) const;

 private:
  const AdmissionOptions options_;
  // Host names accepted besides IP addresses and localhost; suffixes from "*.domain" entries.
  std::set<std::string> host_names_;
  std::vector<std::string> host_suffixes_;
  bool any_host_ = false;
};

}  // namespace trainwatch::api
