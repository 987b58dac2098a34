// Connection: one established link to a server's ingest, over gRPC (a bidirectional stream) or
// HTTP (POST /api/v1/write with a protobuf body). Batches go out in order and their acks come back
// in the same order.
//
// Thread-safety: one thread sends, another reads acks; Cancel may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "trainwatch/client.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::sdk {

struct ConnectOptions {
  std::string server;       // HTTP base URL (https:// for TLS)
  std::string grpc_target;  // empty: discover through GET /api/v1/info
  std::string api_key;
  // TLS (ClientOptions): PEM CA bundle ("": the system's), client certificate chain and key.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  Transport transport = Transport::kAuto;
  double connect_timeout_seconds = 3;
  double request_timeout_seconds = 10;  // HTTP: one POST
};

class Connection {
 public:
  virtual ~Connection() = default;
  virtual const char* name() const = 0;  // "grpc" or "http"
  // Sends one serialised WriteRequest whose sequence is `sequence` (0 for a heartbeat); its ack
  // carries that sequence. False if the connection broke.
  virtual bool Send(const std::string& request, uint64_t sequence) = 0;
  // Blocks for the next ack. False once the connection is broken, cancelled or closed.
  virtual bool ReadAck(v1::WriteAck* ack) = 0;
  // No more sends: ReadAck returns the outstanding acks, then false.
  virtual void CloseSend() = 0;
  // Unblocks Send and ReadAck; they fail from now on.
  virtual void Cancel() = 0;
  // Why the connection ended, once ReadAck returned false (call after the reader stopped).
  virtual std::string Error() = 0;
};

// Where the gRPC ingest is, and whether it speaks TLS.
struct GrpcEndpoint {
  std::string target;  // "host:port"; empty: none
  bool tls = false;
};

// Establishes a connection: gRPC at the configured or advertised address, else (Transport::kAuto)
// HTTP. Unavailable with the reason if the server cannot be reached; PermissionDenied if the link
// would carry the API key in clear text to another machine (tls_policy.h).
//
// Never a downgrade: with an https:// server, gRPC is used only over TLS (a configured grpc_target
// is taken to speak TLS; an advertised plaintext one is not used: HTTPS instead, or with
// Transport::kGrpc an error).
Result<std::unique_ptr<Connection>> Connect(const ConnectOptions& options);

// Separated so that tests and `trainwatch sync` can pick the transport explicitly.
Result<std::unique_ptr<Connection>> ConnectGrpc(const ConnectOptions& options, const GrpcEndpoint& endpoint);
Result<std::unique_ptr<Connection>> ConnectHttp(const ConnectOptions& options);

// GET <server>/api/v1/info: the gRPC address the server advertises, with a wildcard host replaced
// by the host of `server` (target "" if it advertises none), and whether it speaks TLS.
// Unavailable if the server cannot be reached.
Result<GrpcEndpoint> DiscoverGrpcEndpoint(const ConnectOptions& options);

}  // namespace trainwatch::sdk
