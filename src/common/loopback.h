// Whether a host is this machine's loopback: what may be reached without the network.
#pragma once

#include <string_view>

namespace trainwatch {

// True for an address in 127.0.0.0/8 or ::1 (also IPv4-mapped, ::ffff:127.0.0.1; brackets around
// an IPv6 address are ignored) and for the name "localhost". False for anything else, including
// names that might resolve to loopback and unparsable text.
bool IsLoopbackHost(std::string_view host);

}  // namespace trainwatch
