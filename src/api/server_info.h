// What GET /api/v1/info tells a client about this server, and which gRPC address it may use.
#pragma once

#include <string>
#include <string_view>

namespace trainwatch::api {

struct ServerInfo {
  std::string version;
  std::string grpc_address;  // host:port of the gRPC ingest: the host as configured, the bound port
  bool grpc_tls = false;     // the gRPC port speaks TLS only
};

// The gRPC address to advertise to a client connecting from `remote` (an IP address): the
// configured one, or "" when it names a loopback host the client, from another machine, cannot
// reach. A wildcard host (0.0.0.0, [::]) is advertised as is: clients substitute the host they
// reached the server at.
std::string AdvertisedGrpcAddress(const ServerInfo& info, std::string_view remote);

}  // namespace trainwatch::api
