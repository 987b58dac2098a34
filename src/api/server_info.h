// What GET /api/v1/info tells a client about this server, and which gRPC address it may use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::api {

struct ServerInfo {
  std::string version;
  std::string grpc_address;  // host:port of the gRPC ingest: the host as configured, the bound port
  bool grpc_tls = false;     // the gRPC port speaks TLS only
};

// A cluster node's view of its cluster (docs/cluster.md), the "cluster" object of /api/v1/info.
// Membership, owners and the stream's state are as of `refreshed_unix` (0: not read yet).
struct ClusterInfo {
  std::string node;
  uint32_t partitions = 0;
  std::vector<std::string> members;  // live members, sorted
  std::vector<uint32_t> owned;       // this node's partitions
  std::vector<std::string> owners;   // per partition: its holder, "" when none is known
  std::string stream;
  uint64_t stream_last_sequence = 0;
  std::string stream_leader;  // "" when the stream has no leader (or it is not known)
  uint64_t applied_sequence = 0;
  bool nats_connected = false;
  double refreshed_unix = 0;
};

// `info` as the JSON object of /api/v1/info's "cluster" field (schema/api.schema.json,
// ClusterInfo): unknown owners and leader are null, and consumer_lag is the stream's last
// sequence less the applied one (never below 0).
std::string ClusterInfoJson(const ClusterInfo& info);

// The gRPC address to advertise to a client connecting from `remote` (an IP address): the
// configured one, or "" when it names a loopback host the client, from another machine, cannot
// reach. A wildcard host (0.0.0.0, [::]) is advertised as is: clients substitute the host they
// reached the server at.
std::string AdvertisedGrpcAddress(const ServerInfo& info, std::string_view remote);

}  // namespace trainwatch::api
