#include "server/server.h"

#include <sys/resource.h>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "alerting/alert_manager.h"
#include "alerting/alerting_file.h"
#include "api/http_server.h"
#include "api/live_hub.h"
#include "api/routes.h"
#include "api/static_files.h"
#include "api/tls_context.h"
#include "auth/key_store.h"
#include "auth/token_issuer.h"
#include "blob/s3_blob_backend.h"
#include "cluster/cluster_node.h"
#include "cluster/notified_record.h"
#include "cluster/shared_records.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "common/mutex.h"
#include "influx/influx_mirror.h"
#include "ingest/grpc_service.h"
#include "ingest/grpc_tls.h"
#include "ingest/ingestor.h"
#include "notify/outbox.h"
#include "query/local_querier.h"
#include "report/auto_reporter.h"
#include "report/report_store.h"
#include "server/data_dir_lock.h"
#include "server/liveness.h"
#include "server/version.h"
#include "storage/chunk_store.h"
#include "storage/engine.h"
#include "storage/retention.h"
#include "storage/wal/wal_log.h"
#include "web/dashboard_assets.h"

namespace trainwatch::server {

// Declared in dependency order: destroyed in reverse, servers before the engine they call.
struct Server::Parts {
  ServerConfig config;
  std::unique_ptr<Logger> logger;
  SystemClock clock;
  MetricsRegistry metrics;
  std::unique_ptr<DataDirLock> lock;
  std::unique_ptr<auth::KeyStore> keys;
  std::unique_ptr<auth::TokenIssuer> tokens;
  std::unique_ptr<auth::AuditLog> audit;
  std::unique_ptr<storage::Engine> engine;
  // Cluster mode only (null alone): publishes the ingestor's writes, applies the stream to the
  // engine, owns partitions. Outlives the ingestor and the liveness monitor that write through it.
  std::unique_ptr<cluster::ClusterNode> cluster;
  // Cluster mode only: which alert notifications some node delivered (uses the cluster's
  // connection, so it is declared after it and destroyed before it).
  std::unique_ptr<cluster::NotifiedRecord> notified;
  // --blob-store s3://: moves image bytes out of the engine's store; destroyed before it.
  std::unique_ptr<blob::S3BlobBackend> s3_blobs;
  std::unique_ptr<influx::InfluxMirror> influx_mirror;  // --mirror-influx
  std::unique_ptr<query::LocalQuerier> querier;         // the API's reads of the engine
  std::unique_ptr<ingest::Ingestor> ingestor;
  std::unique_ptr<LivenessMonitor> liveness;
  std::unique_ptr<api::LiveHub> live;
  std::unique_ptr<notify::NotificationOutbox> outbox;
  std::unique_ptr<alerting::AlertManager> alerts;
  // Cluster mode only: silences and acknowledgements shared by every node; applies to `alerts`
  // through the cluster's connection, so it is destroyed before both.
  std::unique_ptr<cluster::SharedRecords> shared_alert_ops;
  // Reports stored when runs end (<data>/reports), made on the reporter's thread.
  std::unique_ptr<report::ReportStore> reports;
  std::unique_ptr<report::AutoReporter> reporter;
  Mutex reload_mu;  // one rule reload at a time
  std::unique_ptr<api::ApiContext> api;
  std::unique_ptr<api::ServerTlsContext> tls;  // null without --tls-cert; outlives http
  std::unique_ptr<api::HttpServer> http;
  std::unique_ptr<ingest::IngestService> grpc_service;
  std::unique_ptr<grpc::Server> grpc;
  int grpc_port = 0;
  std::unique_ptr<storage::Retention> retention;
  Mutex retention_mu;
  std::condition_variable retention_cv;
  bool retention_stop TW_GUARDED_BY(retention_mu) = false;
  std::thread retention_thread;
  bool shut_down = false;

  ~Parts() {
    StopRetention();
    if (liveness) liveness->Stop();
    if (shared_alert_ops) shared_alert_ops->Stop();
    if (cluster) cluster->Stop();
    if (reporter) reporter->Stop();
    if (alerts) alerts->Stop();
    if (outbox) outbox->Stop();
  }

  // Re-reads the alerting file; on success swaps rules, receivers and routes (detector state and
  // unchanged rules' state are kept). Returns a one-line summary or the file's first error.
  Result<std::string> ReloadAlerting() {
    MutexLock lock(reload_mu);
    TW_ASSIGN_OR_RETURN(alerting::AlertingFile file,
                        alerting::LoadAlertingFile(PosixFileSystem(), config.alerting_file));
    TW_RETURN_IF_ERROR(outbox->Reload(file.notify));
    size_t rules = file.rules->rule_count(), receivers = file.notify.receivers.size();
    alerts->Reload(std::move(file.rules));
    reporter->SetPolicy(std::move(file.reports));
    std::string summary = config.alerting_file + ": " + std::to_string(rules) + " rules, " +
                          std::to_string(receivers) + " receivers";
    logger->Info("alerting reloaded", {{"summary", summary}});
    return summary;
  }

  Status StartS3Blobs(storage::BlobStore& blobs) {
    blob::S3BlobOptions options;
    TW_RETURN_IF_ERROR(blob::ParseS3Url(config.blob_store, &options.s3.bucket, &options.s3.prefix));
    options.s3.region = config.s3_region;
    options.s3.endpoint = config.s3_endpoint.empty()
                              ? "https://s3." + config.s3_region + ".amazonaws.com"
                              : config.s3_endpoint;
    options.s3.ca_file = config.s3_ca_file;
    options.s3.verify_tls = config.s3_tls_verify;
    options.s3.credentials = blob::CredentialsFromEnvironment();
    auto backend = blob::S3BlobBackend::Start(std::move(options), blobs, clock, *logger, metrics);
    if (!backend.ok()) return backend.status().WithContext("--blob-store");
    s3_blobs = std::move(backend).value();
    return Status::Ok();
  }

  Status StartInfluxMirror() {
    influx::InfluxMirrorOptions options;
    options.url = config.mirror_influx_url;
    options.database = config.mirror_influx_db;
    options.username = config.mirror_influx_user;
    if (const char* password = std::getenv("TRAINWATCH_MIRROR_INFLUX_PASSWORD")) {
      options.password = password;
    }
    options.dir = config.data_dir + "/mirror/influx";
    options.max_backlog_bytes = config.mirror_influx_max_backlog;
    auto mirror =
        influx::InfluxMirror::Start(std::move(options), PosixFileSystem(), clock, *logger, metrics);
    if (!mirror.ok()) return mirror.status().WithContext("--mirror-influx");
    influx_mirror = std::move(mirror).value();
    return Status::Ok();
  }

  void StopRetention() {
    {
      MutexLock lock(retention_mu);
      retention_stop = true;
    }
    retention_cv.notify_all();
    if (retention_thread.joinable()) retention_thread.join();
  }

  void RetentionLoop() {
    MutexLock lock(retention_mu);
    for (;;) {
      // Sooner while the disk is near the guard's threshold (Retention::NextPollSeconds).
      const double wait = retention->NextPollSeconds(config.retention_interval_seconds);
      if (clock.WaitFor(lock.native(), retention_cv, wait,
                        [&]() TW_REQUIRES(retention_mu) { return retention_stop; }))
        return;
      lock.Unlock();
      Status s = retention->RunOnce();
      if (!s.ok()) logger->Error("retention pass", {{"error", s.ToString()}});
      if (Status a = audit->ApplyRetention(); !a.ok())
        logger->Error("audit log retention", {{"error", a.ToString()}});
      lock.Lock();
    }
  }
};

namespace {

// The log is owned by the engine, which outlives every reader of the registry (the HTTP server).
void RegisterWalMetrics(const storage::wal::WalLog& wal, MetricsRegistry& metrics) {
  auto gauge = [&](const char* name, const char* help, uint64_t storage::wal::WalStats::*field) {
    metrics.AddGauge(name, help, [&wal, field] { return static_cast<double>(wal.Stats().*field); });
  };
  gauge("trainwatch_wal_appends", "Records made durable in the write-ahead log.",
        &storage::wal::WalStats::appends);
  gauge("trainwatch_wal_group_commits", "Group commits (one fdatasync each).",
        &storage::wal::WalStats::groups);
  gauge("trainwatch_wal_bytes_written", "Bytes written to the write-ahead log.",
        &storage::wal::WalStats::bytes_written);
  gauge("trainwatch_wal_queued_bytes", "Bytes appended and not yet durable.",
        &storage::wal::WalStats::queued_bytes);
  gauge("trainwatch_wal_segments", "Write-ahead log segment files.",
        &storage::wal::WalStats::segments);
  metrics.AddGauge("trainwatch_wal_healthy", "1 while the write-ahead log accepts appends.",
                   [&wal] { return wal.Health().ok() ? 1.0 : 0.0; });
}

// Each connection holds a file descriptor: use all the process may have (the soft limit is often
// 1024), so that a flood meets the connection caps before the descriptor limit. Returns the limit.
uint64_t RaiseFileLimit(Logger& log) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlim_t before = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      log.Warn("cannot raise the open-file limit", {{"limit", static_cast<uint64_t>(before)}});
      limit.rlim_cur = before;
    }
  }
  return static_cast<uint64_t>(limit.rlim_cur);
}

// Descriptors kept for the store, the log, the alert store and the outbox whatever the clients do.
constexpr uint64_t kStoreFileReserve = 256;

// Caps connections so that they can never take the descriptors the store needs.
void FitConnectionsToFileLimit(uint64_t file_limit, api::HttpServerOptions* options, Logger& log) {
  const uint64_t room = file_limit > kStoreFileReserve + 16 ? file_limit - kStoreFileReserve : 16;
  if (room >= static_cast<uint64_t>(options->max_connections)) return;
  options->max_connections = static_cast<int>(room);
  options->max_connections_per_address =
      std::min(options->max_connections_per_address, options->max_connections);
  log.Warn("the open-file limit caps HTTP connections",
           {{"file_limit", file_limit}, {"max_connections", room}});
}

}  // namespace

Server::Server(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}

Server::~Server() {
  Status s = Shutdown();
  if (!s.ok()) parts_->logger->Error("shutdown", {{"error", s.ToString()}});
}

Result<std::unique_ptr<Server>> Server::Start(const ServerConfig& config) {
  auto p = std::make_unique<Parts>();
  p->config = config;
  p->logger = std::make_unique<Logger>(config.log_level);
  Logger& log = *p->logger;
  const uint64_t file_limit = RaiseFileLimit(log);

  TW_ASSIGN_OR_RETURN(p->lock, DataDirLock::Acquire(config.data_dir));
  TW_ASSIGN_OR_RETURN(p->keys, auth::KeyStore::Open(PosixFileSystem(),
                                                    auth::KeyFilePath(config.data_dir), p->clock));
  p->keys->SetBootstrapKey(config.api_key);
  TW_ASSIGN_OR_RETURN(std::string token_secret, auth::RandomTokenSecret());
  p->tokens = std::make_unique<auth::TokenIssuer>(*p->keys, p->clock, std::move(token_secret),
                                                  config.token_ttl_seconds);
  TW_ASSIGN_OR_RETURN(
      p->audit, auth::AuditLog::Open(PosixFileSystem(), auth::AuditDir(config.data_dir), p->clock,
                                     log, config.audit_retention_seconds));
  if (!p->keys->enabled() && (!config.listen.IsLoopback() || !config.grpc_listen.IsLoopback())) {
    return Status::InvalidArgument(
        "refusing to listen beyond loopback without an API key: set --api-key or "
        "TRAINWATCH_API_KEY, or "
        "create one with `trainwatch keys create`");
  }
  cluster::ClusterNodeOptions cluster_options;
  if (config.cluster()) {
    cluster_options.servers = config.nats_servers;
    cluster_options.node_name = config.node_name;
    cluster_options.partitions = config.partitions;
    cluster_options.lease_seconds = config.cluster_lease_seconds;
    cluster_options.stream_max_age_seconds = config.cluster_stream_max_age_seconds;
    cluster_options.snapshot_interval_seconds = config.cluster_snapshot_interval_seconds;
    cluster_options.snapshot_dir = config.data_dir + "/snapshots";
    // Before the engine opens: an empty store (or one the stream has moved past) becomes the
    // cluster's newest store snapshot, and the applier replays only the tail after it.
    Result<cluster::StoreBootstrapReport> prepared = cluster::ClusterNode::PrepareStore(
        cluster_options, config.data_dir, PosixFileSystem(), p->clock, log);
    if (!prepared.ok()) return prepared.status().WithContext("joining the cluster (--nats)");
  }
  storage::wal::WalOptions wal_options;
  wal_options.retry_clock = &p->clock;  // after a full disk or EIO, writing resumes by itself
  TW_ASSIGN_OR_RETURN(auto wal, storage::wal::WalLog::Open(PosixFileSystem(),
                                                           config.data_dir + "/wal", wal_options));
  RegisterWalMetrics(*wal, p->metrics);
  TW_ASSIGN_OR_RETURN(auto store, storage::ChunkStore::Open(config.data_dir + "/store"));
  storage::BlobStore& blobs = store->blobs();  // owned by the engine from here on
  storage::EngineOptions engine_options;
  engine_options.checkpoint_log_bytes = config.checkpoint_log_bytes;
  engine_options.checkpoint_interval_seconds = config.checkpoint_interval_seconds;
  TW_ASSIGN_OR_RETURN(
      p->engine, storage::Engine::Open(engine_options, std::move(wal), std::move(store), p->clock,
                                       log, p->metrics));
  if (config.blob_store != "embedded") TW_RETURN_IF_ERROR(p->StartS3Blobs(blobs));
  if (!config.mirror_influx_url.empty()) TW_RETURN_IF_ERROR(p->StartInfluxMirror());
  p->ingestor = std::make_unique<ingest::Ingestor>(*p->engine, p->clock, config.limits, p->metrics);
  std::vector<std::string> secret_patterns = SecretMasker::DefaultPatterns();
  secret_patterns.insert(secret_patterns.end(), config.secret_patterns.begin(),
                         config.secret_patterns.end());
  p->ingestor->SetSecretMasker(SecretMasker(secret_patterns));
  if (config.cluster()) {
    // Writes go to the cluster's stream; the applier (started below, once the commit listener is
    // set) brings them into this engine, as into every node's.
    auto node =
        cluster::ClusterNode::Connect(cluster_options, *p->engine, p->clock, log, p->metrics);
    if (!node.ok()) return node.status().WithContext("joining the cluster (--nats)");
    p->cluster = std::move(node).value();
    p->ingestor->SetSink(
        [node = p->cluster.get()](v1::WriteRequest request, storage::Engine::WriteCallback done) {
          node->Publish(std::move(request), std::move(done));
        });
  }
  storage::RetentionOptions retention_options;
  retention_options.max_age_seconds = config.retention_max_age;
  retention_options.disk_threshold_percent = config.disk_guard_percent;
  retention_options.disk_guard_min_age_seconds = config.disk_guard_min_age_seconds;
  // Reports stored when runs end; a run the disk guard deletes takes its report with it.
  p->reports =
      std::make_unique<report::ReportStore>(PosixFileSystem(), config.data_dir + "/reports");
  p->engine->SetRunDeletedListener(
      [reports = p->reports.get(), logger = p->logger.get()](const storage::RunKey& run) {
        Status removed = reports->Remove(run.project, run.run);
        if (!removed.ok()) {
          logger->Error("removing a deleted run's report", {{"error", removed.ToString()}});
        }
      });
  p->retention = std::make_unique<storage::Retention>(
      *p->engine, p->clock, log, retention_options,
      [dir = config.data_dir] { return storage::DiskUsedPercent(dir); },
      [ingestor = p->ingestor.get()](Status refusal) { ingestor->SetRefusal(std::move(refusal)); });
  Status first_pass = p->retention->RunOnce();  // refuse at once if the disk is already full
  if (!first_pass.ok()) log.Error("retention pass", {{"error", first_pass.ToString()}});
  p->retention_thread = std::thread([parts = p.get()] { parts->RetentionLoop(); });
  // Cluster mode: whether this node holds the lease of a run's partition; it watches the run's
  // liveness and notifies its alerts.
  std::function<bool(const std::string&, const std::string&)> owns_run;
  if (p->cluster) {
    owns_run = [node = p->cluster.get()](const std::string& project, const std::string& run) {
      return node->OwnsRun(project, run);
    };
  }
  LivenessOptions liveness_options;
  liveness_options.owns = owns_run;
  p->liveness =
      std::make_unique<LivenessMonitor>(*p->engine, *p->ingestor, p->clock, log, liveness_options);
  p->liveness->Start();
  p->live = std::make_unique<api::LiveHub>(p->metrics);

  // Alerting: rules and receivers from one file; alerts in <data>/alerts, deliveries in
  // <data>/notify.
  auto alerting_file = alerting::LoadAlertingFile(PosixFileSystem(), config.alerting_file);
  if (!alerting_file.ok()) return alerting_file.status().WithContext("reading the alerting file");
  notify::OutboxOptions outbox_options;
  TW_ASSIGN_OR_RETURN(p->outbox, notify::NotificationOutbox::Open(
                                     config.data_dir + "/notify", alerting_file->notify,
                                     PosixFileSystem(), p->clock, outbox_options, log, p->metrics));
  alerting::AlertManagerOptions alert_options;
  alert_options.cooldown_seconds = config.alert_cooldown_seconds;
  alert_options.external_url = config.external_url.empty()
                                   ? std::string(config.tls() ? "https://" : "http://") +
                                         config.listen.host + ":" +
                                         std::to_string(config.listen.port)
                                   : config.external_url;
  TW_ASSIGN_OR_RETURN(p->alerts, alerting::AlertManager::Open(
                                     alert_options, PosixFileSystem(), config.data_dir + "/alerts",
                                     p->clock, log, p->metrics, alerting_file->rules));
  p->alerts->SetNotify(
      [outbox = p->outbox.get()](const notify::Notification& n) { return outbox->Enqueue(n); });
  p->alerts->SetChangeListener([live = p->live.get()](const alerting::AlertRecord& a) {
    live->PublishAlert(a.project, a.run, a.ToJson().dump());
  });
  if (p->cluster) {
    // Every node detects every run (the same alerts everywhere, nothing to rebuild on take-over);
    // only the owner of a run's partition notifies, and not what the cluster's notified record
    // says some node delivered. Gaining partitions tells their receivers what they missed.
    cluster::NotifiedRecordOptions notified_options;
    notified_options.node_name = config.node_name;
    TW_RETURN_IF_ERROR(p->cluster->RetryJoin("the notified record", [&]() -> Status {
      TW_ASSIGN_OR_RETURN(p->notified,
                          cluster::NotifiedRecord::Open(p->cluster->jetstream(), notified_options,
                                                        p->clock, log, p->metrics));
      return Status::Ok();
    }));
    p->outbox->SetDeliveredListener(
        [record = p->notified.get()](const notify::Notification& n, const std::string&) {
          record->Mark(n.idempotency_key);
        });
    alerting::ClusterGate gate;
    gate.owns = owns_run;
    gate.delivered = [record = p->notified.get()](const std::string& key) {
      return record->Contains(key);
    };
    p->alerts->SetClusterGate(std::move(gate));
    p->cluster->SetGainedListener(
        [alerts = p->alerts.get()](const std::vector<uint32_t>&) { alerts->RequestTakeOver(); });
    // Silences and acknowledgements made through any node hold on every node.
    TW_RETURN_IF_ERROR(p->cluster->RetryJoin("the shared alert operations", [&]() -> Status {
      TW_ASSIGN_OR_RETURN(
          p->shared_alert_ops,
          cluster::SharedRecords::Open(
              p->cluster->jetstream(), cluster::SharedRecordsOptions{}, p->clock, log, p->metrics,
              [alerts = p->alerts.get()](const std::string&, const std::string& value) -> Status {
                TW_ASSIGN_OR_RETURN(alerting::SharedAlertOp op,
                                    alerting::SharedAlertOp::FromJson(value));
                return alerts->ApplyShared(op);
              }));
      return Status::Ok();
    }));
    p->alerts->SetSharedOpsListener(
        [records = p->shared_alert_ops.get()](const alerting::SharedAlertOp& op) {
          records->Put(op.Key(), op.ToJson());
        });
  }
  p->alerts->Start();
  // The querier serves the API and the automatic reports.
  p->querier = std::make_unique<query::LocalQuerier>(*p->engine);
  report::AutoReporterOptions report_options;
  report_options.external_url = alert_options.external_url;
  report_options.generator = std::string("trainwatch ") + kVersion;
  p->reporter = std::make_unique<report::AutoReporter>(report_options, *p->querier, p->alerts.get(),
                                                       *p->reports, p->clock, log, p->metrics,
                                                       std::move(alerting_file->reports));
  p->reporter->SetNotify(
      [outbox = p->outbox.get()](const notify::Notification& n) { return outbox->Enqueue(n); });
  if (owns_run) p->reporter->SetOwns(owns_run);
  p->reporter->Start();
  p->engine->SetCommitListener(
      [live = p->live.get(), alerts = p->alerts.get(), reporter = p->reporter.get(),
       s3_blobs = p->s3_blobs.get(), mirror = p->influx_mirror.get()](
          const v1::WriteRequest& request, const storage::WriteOutcome& outcome) {
        if (outcome.duplicate_batch) return;
        if (s3_blobs != nullptr &&
            std::any_of(request.runs().begin(), request.runs().end(),
                        [](const v1::RunBatch& b) { return b.images_size() > 0; }))
          s3_blobs->Wake();
        if (mirror != nullptr && outcome.points_written > 0) mirror->Offer(request);
        if (outcome.points_written > 0) live->Publish(request);
        // In a cluster every node applies and detects every run (the owner alone notifies).
        alerts->OnCommit(request);
        reporter->OnCommit(request);  // queues ended runs only: never waits
      });
  if (p->cluster) p->cluster->Run();

  // TLS files are checked (and a bad one named) before anything listens.
  if (config.tls()) {
    TW_ASSIGN_OR_RETURN(p->tls, api::ServerTlsContext::Load(PosixFileSystem(), config.tls_files()));
  } else if (!config.listen.IsLoopback() || !config.grpc_listen.IsLoopback()) {
    log.Warn(
        "serving plaintext beyond loopback: keys and data cross the network in clear text; "
        "use --tls-cert and --tls-key (docs/security.md)");
  }

  // gRPC first: /api/v1/info tells clients the port it is bound to.
  p->grpc_service = std::make_unique<ingest::IngestService>(*p->ingestor, p->keys.get(),
                                                            config.allow_from, p->audit.get());
  grpc::ServerBuilder builder;
  std::string grpc_address =
      config.grpc_listen.host + ":" + std::to_string(config.grpc_listen.port);
  if (config.grpc_listen.host.find(':') != std::string::npos) {
    grpc_address = "[" + config.grpc_listen.host + "]:" + std::to_string(config.grpc_listen.port);
  }
  std::shared_ptr<grpc::ServerCredentials> grpc_credentials = grpc::InsecureServerCredentials();
  if (config.tls()) {  // the same certificate as HTTP, re-read when its files change
                       // (ingest/grpc_tls.h)
    auto tls = ingest::GrpcTlsCredentials(config.tls_files());
    if (!tls.ok()) return tls.status().WithContext("gRPC TLS");
    grpc_credentials = std::move(tls).value();
  }
  builder.AddListeningPort(grpc_address, grpc_credentials, &p->grpc_port);
  builder.RegisterService(p->grpc_service.get());
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<uint64_t>(config.limits.max_body_bytes, INT32_MAX)));
  // Never share the port with another process (gRPC sets SO_REUSEPORT by default).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  p->grpc = builder.BuildAndStart();
  if (!p->grpc || p->grpc_port == 0) {
    return Status::Unavailable("cannot listen for gRPC on " + grpc_address + " (address in use?)");
  }

  api::ServerInfo info;
  info.version = kVersion;
  info.grpc_address =
      grpc_address.substr(0, grpc_address.rfind(':') + 1) + std::to_string(p->grpc_port);
  info.grpc_tls = config.tls();
  p->api = std::make_unique<api::ApiContext>(api::ApiContext{.engine = *p->engine,
                                                             .querier = *p->querier,
                                                             .ingestor = *p->ingestor,
                                                             .metrics = p->metrics,
                                                             .live = *p->live,
                                                             .server = std::move(info),
                                                             .clock = p->clock,
                                                             .alerts = p->alerts.get()});
  p->api->keys = p->keys.get();
  p->api->audit = p->audit.get();
  p->api->max_raw_points = config.max_raw_points;
  p->api->report_store = p->reports.get();
  p->api->tokens = p->tokens.get();
  p->api->outbox_health = [outbox = p->outbox.get()] { return outbox->Health(); };
  if (!config.alerting_file.empty())
    p->api->reload_rules = [parts = p.get()] { return parts->ReloadAlerting(); };
  if (p->cluster) {
    p->api->cluster_info = [node = p->cluster.get()] {
      cluster::ClusterView v = node->View();
      api::ClusterInfo info;
      info.node = std::move(v.node);
      info.partitions = v.partitions;
      info.members = std::move(v.members);
      info.owned = std::move(v.owned);
      info.owners = std::move(v.owners);
      info.stream = std::move(v.stream);
      info.stream_last_sequence = v.stream_last_sequence;
      info.stream_leader = std::move(v.stream_leader);
      info.applied_sequence = v.applied_sequence;
      info.nats_connected = v.nats_connected;
      info.refreshed_unix = v.refreshed_unix;
      return info;
    };
    p->api->cluster_health = [node = p->cluster.get()] { return node->Health(); };
    p->api->cluster_snapshot = [node = p->cluster.get()]() -> Result<std::string> {
      TW_ASSIGN_OR_RETURN(cluster::SnapshotManifest manifest, node->TakeSnapshot());
      return manifest.ToJson();
    };
  }
  api::HttpServerOptions http_options;
  http_options.tls = p->tls.get();
  http_options.host = config.listen.host;
  http_options.port = config.listen.port;
  http_options.threads = config.http_threads;
  http_options.query_threads = config.query_threads;
  http_options.max_body_bytes = config.limits.max_body_bytes;
  http_options.keys = p->keys.get();
  http_options.tokens = p->tokens.get();
  http_options.audit = p->audit.get();
  http_options.allow_from = config.allow_from;
  http_options.allowed_hosts = config.allowed_hosts;
  http_options.cors_origins = config.cors_origins;
  FitConnectionsToFileLimit(file_limit, &http_options, log);
  p->http = std::make_unique<api::HttpServer>(http_options, log, p->metrics);
  api::RegisterRoutes(*p->http, *p->api);
  api::RegisterStaticFiles(*p->http,
                           std::make_shared<const api::StaticFiles>(web::DashboardAssets()));
  if (web::DashboardIsPlaceholder()) {
    log.Info(
        "the web dashboard was not built into this binary: / serves a placeholder page (see "
        "docs/operations.md)");
  }
  if (Status s = p->http->Start(); !s.ok()) {
    p->grpc->Shutdown();
    return s.WithContext("starting HTTP");
  }
  log.Info("trainwatch serving",
           {{"http", std::string(config.tls() ? "https://" : "http://") + config.listen.host + ":" +
                         std::to_string(p->http->port())},
            {"grpc", config.grpc_listen.host + ":" + std::to_string(p->grpc_port)},
            {"data_dir", config.data_dir}});
  return std::unique_ptr<Server>(new Server(std::move(p)));
}

uint16_t Server::http_port() const { return parts_->http->port(); }
uint16_t Server::grpc_port() const { return static_cast<uint16_t>(parts_->grpc_port); }
storage::Engine& Server::engine() { return *parts_->engine; }

Result<std::string> Server::ReloadAlerting() {
  if (parts_->config.alerting_file.empty())
    return Status::NotFound("no alerting file is configured (--alerting FILE)");
  return parts_->ReloadAlerting();
}

Result<bool> Server::ReloadTls() { return parts_->http->ReloadTls(); }

bool Server::tls() const { return parts_->tls != nullptr; }

Status Server::Shutdown() {
  if (parts_->shut_down) return Status::Ok();
  parts_->shut_down = true;
  parts_->logger->Info("shutting down: draining writes");
  parts_->grpc_service->CancelAll();
  parts_->grpc->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(10));
  parts_->http->Stop();
  parts_->audit->Stop();  // after HTTP: the last answers' entries are written
  parts_->StopRetention();
  parts_->liveness->Stop();
  if (parts_->shared_alert_ops) parts_->shared_alert_ops->Stop();  // the API's last operations
  if (parts_->cluster) parts_->cluster->Stop();    // publishes drained, the applier stopped
  if (parts_->s3_blobs) parts_->s3_blobs->Stop();  // an upload in flight finishes first
  parts_->reporter->Stop();  // the reports of runs ended so far, while the engine is open
  Status s = parts_->engine->Close();
  if (parts_->influx_mirror) parts_->influx_mirror->Stop();  // after the last commits
  parts_->alerts->Stop();  // after the engine: the last commits' events are processed
  parts_->outbox->Stop();
  parts_->logger->Info("shut down", {{"status", s.ToString()}});
  return s;
}

}  // namespace trainwatch::server
