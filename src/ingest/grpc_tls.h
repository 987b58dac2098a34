// TLS for the gRPC ingest port: server credentials from PEM files that gRPC re-reads while it runs,
// so that a renewed certificate is served to new connections without a restart (open streams keep
// the session they began with).
#pragma once

#include <memory>
#include <string>

#include <grpcpp/security/server_credentials.h>

#include "common/status.h"

namespace trainwatch::ingest {

struct GrpcTlsFiles {
  std::string cert_file;       // PEM certificate chain, the server's own certificate first
  std::string key_file;        // PEM private key of that certificate
  std::string client_ca_file;  // PEM CA bundle; non-empty: clients must present a certificate it signed
};

// How often gRPC looks at the files for a new certificate (and client CA). Replacing the files is
// enough to rotate: within this many seconds new handshakes use the new pair. Rename complete files
// into place, key then certificate: a pair read half-replaced may fail handshakes until the next
// refresh.
inline constexpr unsigned kGrpcTlsRefreshSeconds = 2;

// Checks the files once (readable, PEM, the key belongs to the certificate, the CA bundle holds a
// certificate) — gRPC's watcher would only log a bad file — and returns TLS 1.2+ credentials backed
// by a grpc::experimental::FileWatcherCertificateProvider. With a client CA, a client without a
// certificate it signed fails the handshake (mutual TLS). InvalidArgument naming the file at fault.
Result<std::shared_ptr<grpc::ServerCredentials>> GrpcTlsCredentials(const GrpcTlsFiles& files);

}  // namespace trainwatch::ingest
