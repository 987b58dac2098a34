#include "server/config.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>

#include <yaml-cpp/yaml.h>

#include "blob/s3_client.h"
#include "common/loopback.h"
#include "common/strings.h"

namespace trainwatch::server {
namespace {

// One setting: its flag, environment variable and YAML key.
struct Setting {
  const char* flag;
  const char* env;
  const char* yaml;
  const char* help;
};

constexpr Setting kSettings[] = {
    {"--data-dir", "TRAINWATCH_DATA_DIR", "data_dir",
     "directory for the store and log (default ./data)"},
    {"--listen", "TRAINWATCH_LISTEN", "listen", "HTTP address (default 127.0.0.1:8080)"},
    {"--grpc-listen", "TRAINWATCH_GRPC_LISTEN", "grpc_listen",
     "gRPC address (default 127.0.0.1:8081)"},
    {"--log-level", "TRAINWATCH_LOG_LEVEL", "log_level",
     "debug, info, warn or error (default info)"},
    {"--api-key", "TRAINWATCH_API_KEY", "api_key", "key clients must send; required off loopback"},
    {"--allowed-hosts", "TRAINWATCH_ALLOWED_HOSTS", "allowed_hosts",
     "comma-separated names clients reach this server by, besides IP addresses, localhost and this "
     "machine's name (\"*.example.com\" for a domain, \"*\" for any); other Host headers get a 403 "
     "(DNS rebinding)"},
    {"--cors-origins", "TRAINWATCH_CORS_ORIGINS", "cors_origins",
     "comma-separated origins (https://app.example) whose pages may call the API; other pages "
     "cannot change anything"},
    {"--secret-patterns", "TRAINWATCH_SECRET_PATTERNS", "secret_patterns",
     "comma-separated config/tag key patterns whose values are masked before they are stored, "
     "besides password, passwd, secret, token, api_key, apikey, access_key, private_key, "
     "credential(s), auth"},
    {"--allow-from", "TRAINWATCH_ALLOW_FROM", "allow_from",
     "comma-separated networks (10.0.0.0/8, fd00::/8, 192.168.1.7) clients may connect from; "
     "others are closed at once (default: any)"},
    {"--tls-cert", "TRAINWATCH_TLS_CERT", "tls_cert",
     "PEM certificate chain: HTTP, WebSocket and gRPC speak TLS 1.2+ (with --tls-key); re-read on "
     "SIGHUP and when the file changes"},
    {"--tls-key", "TRAINWATCH_TLS_KEY", "tls_key", "PEM private key of --tls-cert"},
    {"--tls-client-ca", "TRAINWATCH_TLS_CLIENT_CA", "tls_client_ca",
     "PEM CA bundle: clients must present a certificate it signed (mutual TLS); needs --tls-cert"},
    {"--http-threads", "TRAINWATCH_HTTP_THREADS", "http_threads", "HTTP I/O threads (default 2)"},
    {"--query-threads", "TRAINWATCH_QUERY_THREADS", "query_threads",
     "threads for queries, exports and blob reads, off the I/O threads (default 2)"},
    {"--max-raw-points", "TRAINWATCH_MAX_RAW_POINTS", "max_raw_points",
     "most points in one raw /api/v1/series answer; more are paged with next_from (default "
     "1000000)"},
    {"--max-body-bytes", "TRAINWATCH_MAX_BODY_BYTES", "max_body_bytes",
     "largest request body (default 64 MiB)"},
    {"--max-image-bytes", "TRAINWATCH_MAX_IMAGE_BYTES", "max_image_bytes",
     "largest encoded image (default 16 MiB); larger ones are refused, the rest of their batch is "
     "kept. An image must also fit in a request (--max-body-bytes)"},
    {"--max-metrics-per-run", "TRAINWATCH_MAX_METRICS_PER_RUN", "max_metrics_per_run",
     "default 10000"},
    {"--max-series-per-project", "TRAINWATCH_MAX_SERIES_PER_PROJECT", "max_series_per_project",
     "default 1000000"},
    {"--retention", "TRAINWATCH_RETENTION", "retention",
     "maximum age per project, e.g. \"p1=30d,p2=12h\""},
    {"--disk-guard-percent", "TRAINWATCH_DISK_GUARD_PERCENT", "disk_guard_percent", "default 95"},
    {"--disk-guard-min-age", "TRAINWATCH_DISK_GUARD_MIN_AGE", "disk_guard_min_age",
     "finished runs older than this may be deleted when the disk is full (default 7d)"},
    {"--retention-interval", "TRAINWATCH_RETENTION_INTERVAL", "retention_interval",
     "how often retention runs (default 60s)"},
    {"--checkpoint-interval", "TRAINWATCH_CHECKPOINT_INTERVAL", "checkpoint_interval",
     "seal and checkpoint at least this often while written to (default 5m)"},
    {"--alerting", "TRAINWATCH_ALERTING", "alerting",
     "YAML file of alert rules, detector settings, receivers and routes (docs/rules.md, "
     "docs/notifications.md); re-read on SIGHUP"},
    {"--external-url", "TRAINWATCH_EXTERNAL_URL", "external_url",
     "base URL of this server in alert links (default http://LISTEN)"},
    {"--audit-retention", "TRAINWATCH_AUDIT_RETENTION", "audit_retention",
     "how long audit log entries are kept (default 90d)"},
    {"--token-ttl", "TRAINWATCH_TOKEN_TTL", "token_ttl",
     "how long a short-lived token (POST /api/v1/tokens; what the dashboard puts in WebSocket and "
     "image URLs instead of its key) is good for, 1s to 1h (default 5m)"},
    {"--nats", "TRAINWATCH_NATS", "nats",
     "cluster mode: comma-separated nats:// URLs of the NATS JetStream cluster to join "
     "(docs/cluster.md); without it the server runs alone (the default)"},
    {"--node-name", "TRAINWATCH_NODE_NAME", "node_name",
     "cluster mode: this node's name, unique in the cluster (letters, digits, - and _)"},
    {"--partitions", "TRAINWATCH_PARTITIONS", "partitions",
     "cluster mode: the cluster's partition count, fixed by its first node (default 16)"},
    {"--cluster-lease", "TRAINWATCH_CLUSTER_LEASE", "cluster_lease",
     "cluster mode: a node that stops renewing its partitions loses them after this; the same on "
     "every node (default 10s)"},
    {"--cluster-stream-max-age", "TRAINWATCH_CLUSTER_STREAM_MAX_AGE", "cluster_stream_max_age",
     "cluster mode: the ingest stream keeps a message this long, 0 for ever; set on the stream "
     "by every node that starts (default 7d; docs/cluster.md, bounded rebuild)"},
    {"--cluster-snapshot-interval", "TRAINWATCH_CLUSTER_SNAPSHOT_INTERVAL",
     "cluster_snapshot_interval",
     "cluster mode: the holder of partition 0 publishes a store snapshot once the newest is this "
     "old, 0 only when asked (POST /api/v1/cluster/snapshot); keep it well below "
     "--cluster-stream-max-age (default 1h)"},
    {"--alert-cooldown", "TRAINWATCH_ALERT_COOLDOWN", "alert_cooldown",
     "an incident that recurs within this after resolving reopens its alert without notifying "
     "again (default 10m)"},
    {"--blob-store", "TRAINWATCH_BLOB_STORE", "blob_store",
     "where image bytes live: embedded (default, in the store) or s3://bucket[/prefix] in an "
     "S3-compatible object store, credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
     "(docs/blob_store.md)"},
    {"--s3-endpoint", "TRAINWATCH_S3_ENDPOINT", "s3_endpoint",
     "the object store's URL, http(s)://host[:port], addressed path-style (default "
     "https://s3.REGION.amazonaws.com)"},
    {"--s3-region", "TRAINWATCH_S3_REGION", "s3_region",
     "the region requests are signed for (default us-east-1)"},
    {"--s3-ca-file", "TRAINWATCH_S3_CA_FILE", "s3_ca_file",
     "PEM CA bundle that verifies the object store's certificate (default: the system's)"},
    {"--s3-tls-verify", "TRAINWATCH_S3_TLS_VERIFY", "s3_tls_verify",
     "true (default) or false: verify the object store's certificate"},
    {"--mirror-influx", "TRAINWATCH_MIRROR_INFLUX", "mirror_influx",
     "InfluxDB 1.x URL (http://host:8086) every accepted point is also written to, batched and "
     "retried from a durable outbox (docs/influx.md)"},
    {"--mirror-influx-db", "TRAINWATCH_MIRROR_INFLUX_DB", "mirror_influx_db",
     "the mirror's database (default trainwatch; created if missing)"},
    {"--mirror-influx-user", "TRAINWATCH_MIRROR_INFLUX_USER", "mirror_influx_user",
     "the mirror's user; its password only from TRAINWATCH_MIRROR_INFLUX_PASSWORD"},
    {"--mirror-influx-max-backlog", "TRAINWATCH_MIRROR_INFLUX_MAX_BACKLOG",
     "mirror_influx_max_backlog",
     "bytes of line protocol the mirror's outbox keeps while InfluxDB is unreachable; past it "
     "points are dropped and counted (default 268435456)"},
};

Result<uint64_t> ParseCount(const std::string& name, const std::string& text) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v == 0) {
    return Status::InvalidArgument(name + ": expected a positive integer, got '" + text + "'");
  }
  return v;
}

Status Apply(ServerConfig* c, const std::string& key, const std::string& value,
             const std::string& where) {
  auto wrap = [&](Status s) { return s.WithContext(where); };
  if (key == "data_dir") {
    if (value.empty()) return Status::InvalidArgument(where + ": data directory is empty");
    c->data_dir = value;
  } else if (key == "listen" || key == "grpc_listen") {
    Result<HostPort> hp = ParseHostPort(value);
    if (!hp.ok()) return wrap(hp.status());
    (key == "listen" ? c->listen : c->grpc_listen) = *hp;
  } else if (key == "log_level") {
    if (!ParseLogLevel(value, &c->log_level)) {
      return Status::InvalidArgument(where + ": log level must be debug, info, warn or error");
    }
  } else if (key == "api_key") {
    c->api_key = value;
  } else if (key == "allowed_hosts" || key == "cors_origins" || key == "secret_patterns") {
    std::vector<std::string>& list = key == "allowed_hosts"  ? c->allowed_hosts
                                     : key == "cors_origins" ? c->cors_origins
                                                             : c->secret_patterns;
    list.clear();
    for (std::string_view listed : SplitList(value)) {
      std::string item(listed);
      if (key == "cors_origins" && item.find("://") == std::string::npos) {
        return Status::InvalidArgument(where + ": an origin looks like https://host[:port], got '" +
                                       item + "'");
      }
      while (key == "cors_origins" && item.back() == '/') item.pop_back();
      list.push_back(std::move(item));
    }
  } else if (key == "allow_from") {
    Result<CidrList> networks = CidrList::Parse(value);
    if (!networks.ok()) return wrap(networks.status());
    c->allow_from = std::move(*networks);
  } else if (key == "tls_cert" || key == "tls_key" || key == "tls_client_ca") {
    if (value.empty()) return Status::InvalidArgument(where + ": " + key + " names no file");
    (key == "tls_cert"  ? c->tls_cert_file
     : key == "tls_key" ? c->tls_key_file
                        : c->tls_client_ca_file) = value;
  } else if (key == "alerting") {
    c->alerting_file = value;
  } else if (key == "blob_store") {
    std::string bucket, prefix;
    if (value != "embedded") TW_RETURN_IF_ERROR(wrap(blob::ParseS3Url(value, &bucket, &prefix)));
    c->blob_store = value;
  } else if (key == "s3_endpoint") {
    Result<std::string> host = blob::EndpointHost(value);
    if (!host.ok()) return wrap(host.status());
    c->s3_endpoint = value;
  } else if (key == "s3_region" || key == "s3_ca_file") {
    if (value.empty()) return Status::InvalidArgument(where + ": " + key + " is empty");
    (key == "s3_region" ? c->s3_region : c->s3_ca_file) = value;
  } else if (key == "s3_tls_verify") {
    if (value != "true" && value != "false") {
      return Status::InvalidArgument(where + ": s3_tls_verify must be true or false");
    }
    c->s3_tls_verify = value == "true";
  } else if (key == "mirror_influx") {
    if (value.rfind("http://", 0) != 0 && value.rfind("https://", 0) != 0) {
      return Status::InvalidArgument(where + ": mirror_influx must start with http:// or https://");
    }
    c->mirror_influx_url = value;
  } else if (key == "mirror_influx_db" || key == "mirror_influx_user") {
    if (value.empty()) return Status::InvalidArgument(where + ": " + key + " is empty");
    (key == "mirror_influx_db" ? c->mirror_influx_db : c->mirror_influx_user) = value;
  } else if (key == "external_url") {
    if (value.rfind("http://", 0) != 0 && value.rfind("https://", 0) != 0) {
      return Status::InvalidArgument(where + ": external_url must start with http:// or https://");
    }
    c->external_url = value;
    while (!c->external_url.empty() && c->external_url.back() == '/') c->external_url.pop_back();
  } else if (key == "retention") {
    size_t start = 0;
    while (start < value.size()) {
      size_t comma = value.find(',', start);
      std::string item =
          value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? value.size() : comma + 1;
      size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) {
        return Status::InvalidArgument(where + ": retention entries look like project=30d, got '" +
                                       item + "'");
      }
      Result<double> age = ParseDuration(item.substr(eq + 1));
      if (!age.ok()) return wrap(age.status());
      c->retention_max_age[item.substr(0, eq)] = *age;
    }
  } else if (key == "nats") {
    c->nats_servers.clear();
    for (std::string_view listed : SplitList(value)) {
      std::string url(listed);
      if (url.find("://") == std::string::npos) url = "nats://" + url;
      if (url.rfind("nats://", 0) != 0 && url.rfind("tls://", 0) != 0) {
        return Status::InvalidArgument(where +
                                       ": a NATS server looks like nats://host:port, got '" +
                                       std::string(listed) + "'");
      }
      c->nats_servers.push_back(std::move(url));
    }
    if (c->nats_servers.empty()) return Status::InvalidArgument(where + ": no NATS server given");
  } else if (key == "node_name") {
    if (value.empty() || value.size() > 64) {
      return Status::InvalidArgument(where + ": node_name must be 1 to 64 characters");
    }
    for (char ch : value) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_') {
        return Status::InvalidArgument(
            where + ": node_name may hold only letters, digits, - and _, got '" + value + "'");
      }
    }
    c->node_name = value;
  } else if (key == "partitions") {
    Result<uint64_t> n = ParseCount(where, value);
    if (!n.ok()) return n.status();
    if (*n > 4096) return Status::InvalidArgument(where + ": partitions must be from 1 to 4096");
    c->partitions = static_cast<uint32_t>(*n);
  } else if (key == "cluster_lease") {
    Result<double> d = ParseDuration(value);
    if (!d.ok()) return wrap(d.status());
    if (*d < 1 || *d > 300)
      return Status::InvalidArgument(where + ": cluster_lease must be from 1s to 5m");
    c->cluster_lease_seconds = *d;
  } else if (key == "cluster_stream_max_age" || key == "cluster_snapshot_interval") {
    Result<double> d = ParseDuration(value);
    if (!d.ok()) return wrap(d.status());
    if (*d < 0) return Status::InvalidArgument(where + ": " + key + " must not be negative");
    if (key == "cluster_stream_max_age" && *d > 0 && *d < 1) {
      return Status::InvalidArgument(where + ": cluster_stream_max_age must be 0 or at least 1s");
    }
    (key == "cluster_stream_max_age" ? c->cluster_stream_max_age_seconds
                                     : c->cluster_snapshot_interval_seconds) = *d;
  } else if (key == "token_ttl") {
    Result<double> d = ParseDuration(value);
    if (!d.ok()) return wrap(d.status());
    if (*d < 1 || *d > 3600)
      return Status::InvalidArgument(where + ": token_ttl must be from 1s to 1h");
    c->token_ttl_seconds = *d;
  } else if (key == "disk_guard_min_age" || key == "retention_interval" ||
             key == "checkpoint_interval" || key == "alert_cooldown" || key == "audit_retention") {
    Result<double> d = ParseDuration(value);
    if (!d.ok()) return wrap(d.status());
    if (key == "disk_guard_min_age")
      c->disk_guard_min_age_seconds = *d;
    else if (key == "retention_interval")
      c->retention_interval_seconds = *d;
    else if (key == "alert_cooldown")
      c->alert_cooldown_seconds = *d;
    else if (key == "audit_retention")
      c->audit_retention_seconds = *d;
    else
      c->checkpoint_interval_seconds = *d;
  } else if (key == "disk_guard_percent") {
    double v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || ptr != value.data() + value.size() || v <= 0 || v > 100) {
      return Status::InvalidArgument(where + ": disk_guard_percent must be in (0, 100]");
    }
    c->disk_guard_percent = v;
  } else {
    Result<uint64_t> n = ParseCount(where, value);
    if (!n.ok()) return n.status();
    if (key == "http_threads")
      c->http_threads = static_cast<int>(std::min<uint64_t>(*n, 64));
    else if (key == "query_threads")
      c->query_threads = static_cast<int>(std::min<uint64_t>(*n, 64));
    else if (key == "max_body_bytes")
      c->limits.max_body_bytes = *n;
    else if (key == "max_raw_points")
      c->max_raw_points = *n;
    else if (key == "max_image_bytes")
      c->limits.max_image_bytes = *n;
    else if (key == "max_metrics_per_run")
      c->limits.max_metrics_per_run = *n;
    else if (key == "max_series_per_project")
      c->limits.max_series_per_project = *n;
    else if (key == "mirror_influx_max_backlog")
      c->mirror_influx_max_backlog = *n;
    else
      return Status::InvalidArgument(where + ": unknown setting '" + key + "'");
  }
  return Status::Ok();
}

Status ApplyYamlNodes(ServerConfig* c, const std::string& path);

// A key or value of the wrong YAML type (a mapping as a key, a sequence where a scalar goes) is a
// conversion error of yaml-cpp's, reported with its line.
Status ApplyYaml(ServerConfig* c, const std::string& path) {
  try {
    return ApplyYamlNodes(c, path);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("config file " + path + ": " + e.what());
  }
}

Status ApplyYamlNodes(ServerConfig* c, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("config file " + path + ": " + e.what());
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap())
    return Status::InvalidArgument("config file " + path + ": expected a mapping at the top");
  for (const auto& entry : root) {
    std::string key = entry.first.as<std::string>();
    std::string where =
        "config file " + path + " line " + std::to_string(entry.first.Mark().line + 1);
    bool known = false;
    for (const Setting& s : kSettings) known |= key == s.yaml;
    if (!known) return Status::InvalidArgument(where + ": unknown setting '" + key + "'");
    if (key == "retention" && entry.second.IsMap()) {
      for (const auto& project : entry.second) {
        std::string item = project.first.as<std::string>() + "=" + project.second.as<std::string>();
        TW_RETURN_IF_ERROR(Apply(c, key, item, where));
      }
      continue;
    }
    if (!entry.second.IsScalar())
      return Status::InvalidArgument(where + ": '" + key + "' must be a scalar");
    TW_RETURN_IF_ERROR(Apply(c, key, entry.second.as<std::string>(), where));
  }
  return Status::Ok();
}

}  // namespace

bool HostPort::IsLoopback() const { return IsLoopbackHost(host); }

Result<HostPort> ParseHostPort(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos)
    return Status::InvalidArgument("address '" + text + "' needs host:port");
  HostPort hp;
  hp.host = text.substr(0, colon);
  if (hp.host.size() >= 2 && hp.host.front() == '[' && hp.host.back() == ']') {
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  }
  if (hp.host.empty()) hp.host = "127.0.0.1";
  std::string port = text.substr(colon + 1);
  unsigned v = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (ec != std::errc() || ptr != port.data() + port.size() || v > 65535) {
    return Status::InvalidArgument("address '" + text + "': bad port");
  }
  hp.port = static_cast<uint16_t>(v);
  return hp;
}

Result<ServerConfig> LoadServerConfig(const std::vector<std::string>& args) {
  ServerConfig config;
  // Flags first into a map, so that --config can be found before the precedence is applied.
  std::map<std::string, std::string> flags;
  std::string config_file;
  if (const char* env = std::getenv("TRAINWATCH_CONFIG")) config_file = env;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i], value;
    size_t eq = arg.find('=');
    bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    const Setting* setting = nullptr;
    for (const Setting& s : kSettings) {
      if (arg == s.flag) setting = &s;
    }
    if (!setting && arg != "--config")
      return Status::InvalidArgument("unknown flag '" + arg + "'\n" + ServeUsage());
    if (!inline_value) {
      if (i + 1 >= args.size()) return Status::InvalidArgument("flag " + arg + " needs a value");
      value = args[++i];
    }
    if (arg == "--config")
      config_file = value;
    else
      flags[setting->yaml] = value;
  }
  if (!config_file.empty()) TW_RETURN_IF_ERROR(ApplyYaml(&config, config_file));
  for (const Setting& s : kSettings) {
    if (const char* env = std::getenv(s.env)) {
      TW_RETURN_IF_ERROR(Apply(&config, s.yaml, env, std::string("environment ") + s.env));
    }
  }
  for (const auto& [key, value] : flags) {
    for (const Setting& s : kSettings) {
      if (key == s.yaml)
        TW_RETURN_IF_ERROR(Apply(&config, key, value, std::string("flag ") + s.flag));
    }
  }
  if (config.tls_cert_file.empty() != config.tls_key_file.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together: give both or neither");
  }
  if (config.cluster() && config.node_name.empty()) {
    return Status::InvalidArgument(
        "--nats needs --node-name: every node of a cluster has a name of its own");
  }
  if (!config.cluster() && !config.node_name.empty()) {
    return Status::InvalidArgument("--node-name is for cluster mode: give --nats too");
  }
  if (!config.tls_client_ca_file.empty() && !config.tls()) {
    return Status::InvalidArgument(
        "--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)");
  }
  return config;
}

std::string ServeUsage() {
  std::string out =
      "usage: trainwatch serve [flags]\n  --config FILE  YAML file with the settings below "
      "(TRAINWATCH_CONFIG)\n";
  for (const Setting& s : kSettings) {
    out += "  " + std::string(s.flag) + " VALUE  " + s.help + " (" + s.env + ", yaml: " + s.yaml +
           ")\n";
  }
  return out;
}

}  // namespace trainwatch::server
