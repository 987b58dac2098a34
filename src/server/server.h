// Server: builds and owns every part of `trainwatch serve` — the only place real dependencies (file
// system, clock, network) are constructed and wired together.
#pragma once

#include <memory>

#include "common/status.h"
#include "server/config.h"

namespace trainwatch::storage {
class Engine;
}  // namespace trainwatch::storage

namespace trainwatch::server {

class Server {
 public:
  // Opens the data directory (locking it), recovers the store, and starts serving HTTP and gRPC.
  static Result<std::unique_ptr<Server>> Start(const ServerConfig& config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t http_port() const;
  uint16_t grpc_port() const;
  // The store, for in-process tests that check what arrived.
  storage::Engine& engine();
  // Re-reads the alerting file (SIGHUP, POST /api/v1/rules/reload): a one-line summary, or the
  // file's first error (nothing changed then).
  Result<std::string> ReloadAlerting();
  // Re-reads the TLS certificate and key for HTTP (SIGHUP; gRPC re-reads them on its own): true
  // when new connections get a new certificate; the error when the files do not load (the
  // certificate in use stays).
  Result<bool> ReloadTls();
  bool tls() const;
  // Stops accepting, drains in-flight writes, checkpoints and closes the store.
  Status Shutdown();

 private:
  struct Parts;
  explicit Server(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace trainwatch::server
