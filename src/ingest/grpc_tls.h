// TLS for the gRPC ingest port: server credentials from PEM files that gRPC re-reads while it runs,
// so that a renewed certificate is served to new connections without a restart (open streams keep
// the session they began with).
#pragma once

#include <memory>
#include <string>

#include <grpcpp/security/server_credentials.h>

#include "common/status.h"
#include "common/tls_files.h"

namespace trainwatch::ingest {


// How often gRPC looks at the files for a new certificate (and client CA). Replacing the files is
// enough to rotate: within this many seconds new handshakes use the new pair. Rename complete files
// into place, key then certificate: a pair read half-replaced may fail handshakes until the next
// refresh.
inline constexpr unsigned kGrpcTlsRefreshSeconds = 2;

// TLS 1.2+ credentials backed by a grpc::experimental::FileWatcherCertificateProvider. With a
// client CA, a client without a certificate it signed fails the handshake (mutual TLS). The files
// are not checked here (gRPC's watcher would only log a bad one): the caller checks them first —
// the server loads them through api::ServerTlsContext, which names the file at fault.
Result<std::shared_ptr<grpc::ServerCredentials>> GrpcTlsCredentials(const TlsFiles& files);

}  // namespace trainwatch::ingest
