// ServerTlsContext: the TLS side of the HTTP server (HTTPS and WSS), built from PEM files and
// rebuilt when they change, so that a certificate rotates while the server keeps running.
//
// TLS 1.2 and 1.3 only; for TLS 1.2 only ECDHE key exchange with AEAD ciphers (Mozilla's
// "intermediate" profile without DHE); no renegotiation, no compression. With a client CA, every
// client must present a certificate that CA signed (mutual TLS): the handshake fails otherwise.
//
// Each connection takes the context current when it was accepted and keeps it for its life:
// a reload changes what new connections get and never disturbs open ones. Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "common/file_system.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/tls_files.h"

namespace boost::asio::ssl {
class context;
}

namespace trainwatch::api {

using ::trainwatch::TlsFiles;

// What a certificate in use says of itself (for logs and metrics; no secret in it).
struct TlsCertificateInfo {
  std::string subject;   // "CN=server"
  std::string serial;    // upper-case hex, as `openssl x509 -serial` prints it
  double not_after = 0;  // Unix seconds
};

class ServerTlsContext {
 public:
  // Reads and checks the files. InvalidArgument naming the file and the reason (unreadable, not
  // PEM, a key that does not match the certificate).
  static Result<std::unique_ptr<ServerTlsContext>> Load(FileSystem& fs, TlsFiles files);
  ~ServerTlsContext();
  ServerTlsContext(const ServerTlsContext&) = delete;
  ServerTlsContext& operator=(const ServerTlsContext&) = delete;

  // The context for a new connection; the connection holds it as long as it lives.
  std::shared_ptr<boost::asio::ssl::context> Current() const;
  TlsCertificateInfo certificate() const;

  // Re-reads the files: Ok(false) when their bytes are those in use, Ok(true) when a new context
  // now serves new connections. When the new files do not make a valid context (a rotation
  // half-written: the certificate replaced, its key not yet) the error is returned and the
  // current context stays; the same bytes are not reported twice (Ok(false) until they change).
  Result<bool> Reload();

 private:
  ServerTlsContext(FileSystem& fs, TlsFiles files) : fs_(fs), files_(std::move(files)) {}
  // The files' bytes and their digest (the bytes themselves, a private key among them, are not
  // kept).
  struct Loaded;
  Result<Loaded> Read() const;

  FileSystem& fs_;
  const TlsFiles files_;
  mutable Mutex mu_;
  std::shared_ptr<boost::asio::ssl::context> current_ TW_GUARDED_BY(mu_);
  TlsCertificateInfo certificate_ TW_GUARDED_BY(mu_);
  std::string digest_in_use_ TW_GUARDED_BY(mu_);
  std::string digest_refused_ TW_GUARDED_BY(mu_);  // the last bytes that failed
};

}  // namespace trainwatch::api
