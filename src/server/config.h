// ServerConfig: every setting of `trainwatch serve`, from flags, environment and one YAML file.
// Precedence: flag > environment (TRAINWATCH_*) > YAML file (--config) > default.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/logging.h"
#include "common/status.h"
#include "ingest/limits.h"

namespace trainwatch::server {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  // True for 127.0.0.0/8, ::1 and "localhost".
  bool IsLoopback() const;
};

// Parses "host:port" (also "[::1]:8080" and ":8080", which means 127.0.0.1).
Result<HostPort> ParseHostPort(const std::string& text);

struct ServerConfig {
  std::string data_dir = "./data";
  HostPort listen{"127.0.0.1", 8080};
  HostPort grpc_listen{"127.0.0.1", 8081};
  LogLevel log_level = LogLevel::kInfo;
  // Required when either address is reachable from other hosts: clients send it as
  // `Authorization: Bearer <key>` (HTTP) or `authorization` metadata (gRPC).
  std::string api_key;
  int http_threads = 2;
  ingest::IngestLimits limits;
  uint64_t checkpoint_log_bytes = 512ull << 20;
};

// Parses `trainwatch serve` arguments (argv after "serve"), reading env and the YAML file.
// InvalidArgument with the flag, variable or YAML line at fault.
Result<ServerConfig> LoadServerConfig(const std::vector<std::string>& args);

// The help text of `trainwatch serve`.
std::string ServeUsage();

}  // namespace trainwatch::server
