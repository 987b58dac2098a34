// The PEM files a TLS server is configured with (--tls-cert, --tls-key, --tls-client-ca), as the
// HTTP server (api/tls_context.h) and the gRPC ingest (ingest/grpc_tls.h) both take them.
#pragma once

#include <string>

namespace trainwatch {

struct TlsFiles {
  std::string cert_file;       // PEM certificate chain, the server's own certificate first
  std::string key_file;        // PEM private key of that certificate
  std::string client_ca_file;  // PEM CA certificates clients must chain to; empty: none asked for
  bool enabled() const { return !cert_file.empty(); }
};

}  // namespace trainwatch
