// ServerConfig: every setting of `trainwatch serve`, from flags, environment and one YAML file.
// Precedence: flag > environment (TRAINWATCH_*) > YAML file (--config) > default.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/cidr.h"
#include "common/duration.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/tls_files.h"
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
  // Threads that run queries, exports and blob reads (never the HTTP I/O threads).
  int query_threads = 2;
  // The most points one raw series answer holds; more are paged (next_from).
  uint64_t max_raw_points = 1'000'000;
  // Browser protections (docs/security.md): names the Host header may carry besides IP addresses,
  // localhost and this machine's name ("*" any), and origins allowed to call the API from a page.
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> cors_origins;
  // Key patterns masked in configs and tags besides SecretMasker's defaults.
  std::vector<std::string> secret_patterns;
  // Networks clients may connect from (HTTP and gRPC); empty: any.
  CidrList allow_from;
  // Native TLS for HTTP/WebSocket and gRPC (docs/security.md): PEM certificate chain and private
  // key, both or neither; re-read on SIGHUP and when the files change. With a client CA, clients
  // must present a certificate it signed (mutual TLS).
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  bool tls() const { return !tls_cert_file.empty(); }
  TlsFiles tls_files() const { return {tls_cert_file, tls_key_file, tls_client_ca_file}; }
  ingest::IngestLimits limits;
  uint64_t checkpoint_log_bytes = 512ull << 20;
  double checkpoint_interval_seconds = 300;
  // Retention: project -> maximum age in seconds (YAML `retention:` map, or
  // --retention "p1=30d,p2=12h").
  std::map<std::string, double> retention_max_age;
  double disk_guard_percent = 95;
  double disk_guard_min_age_seconds = 7 * 86400;
  double retention_interval_seconds = 60;
  // Alerting: the rule/receiver file ("" = built-in detectors with defaults, no notifiers), the
  // base of chart links ("" = http://<listen>), and the flapping cooldown.
  std::string alerting_file;
  std::string external_url;
  double alert_cooldown_seconds = 600;
  double audit_retention_seconds = 90 * 86400.0;
  // How long a short-lived token lives (docs/security.md, "Short-lived tokens").
  double token_ttl_seconds = 300;
  // Cluster mode (docs/cluster.md): the NATS servers of the cluster (empty: single-node, the
  // default), this node's name in it, the cluster's partition count and the partition lease.
  std::vector<std::string> nats_servers;
  std::string node_name;
  uint32_t partitions = 16;
  double cluster_lease_seconds = 10;
  // Bounded rebuild (docs/cluster.md): how long the ingest stream keeps a message (0: for ever)
  // and how often the holder of partition 0 publishes a store snapshot (0: only when asked).
  double cluster_stream_max_age_seconds = 7 * 86400.0;
  double cluster_snapshot_interval_seconds = 3600;
  bool cluster() const { return !nats_servers.empty(); }
  // Where image bytes live (docs/blob_store.md): "embedded" (the store) or s3://bucket[/prefix],
  // with the endpoint (path-style; "" = https://s3.REGION.amazonaws.com), region and TLS options;
  // credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY only.
  std::string blob_store = "embedded";
  std::string s3_endpoint;
  std::string s3_region = "us-east-1";
  std::string s3_ca_file;
  bool s3_tls_verify = true;
  // Mirroring out (docs/influx.md, "Mirroring to InfluxDB"): every accepted point also goes to this
  // InfluxDB 1.x ("" = off), database and user; the password comes from
  // TRAINWATCH_MIRROR_INFLUX_PASSWORD only. The outbox keeps at most max_backlog bytes.
  std::string mirror_influx_url;
  std::string mirror_influx_db = "trainwatch";
  std::string mirror_influx_user;
  uint64_t mirror_influx_max_backlog = 256ull << 20;
};

// Durations ("90", "10s", "15m", "12h", "30d", "2w", "1h30m"): common/duration.h.
using ::trainwatch::ParseDuration;

// Parses `trainwatch serve` arguments (argv after "serve"), reading env and the YAML file.
// InvalidArgument with the flag, variable or YAML line at fault.
Result<ServerConfig> LoadServerConfig(const std::vector<std::string>& args);

// The help text of `trainwatch serve`.
std::string ServeUsage();

}  // namespace trainwatch::server
