// What a link to the server may carry: the SDK never sends its API key in clear text to another
// machine, and never talks plaintext gRPC to a server it was told to reach over https://.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace trainwatch::sdk {

// True for an https:// URL (the scheme compared case-insensitively).
bool IsHttpsUrl(std::string_view url);

// The host of an http(s) URL ("[::1]" stays bracketed; no scheme: the URL is host[:port][/...]).
std::string HostOfUrl(std::string_view url);

// The host of a gRPC target: "host:port", "[::1]:port", "dns:///host:port", "ipv4:1.2.3.4:port"
// (the first address). A unix-socket target ("unix:...") is "localhost".
std::string HostOfTarget(std::string_view target);

// Ok unless an API key would travel in clear text beyond this machine: with a non-empty `api_key`,
// a link that is not `encrypted` to a `host` that is not loopback (127.0.0.0/8, ::1, localhost) is
// PermissionDenied, naming `destination` and saying to use https://. There is no way around it.
Status CheckKeyNotInClear(const std::string& api_key, bool encrypted, std::string_view host,
                          std::string_view destination);

}  // namespace trainwatch::sdk
