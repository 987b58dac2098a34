#include "cluster/cluster_node.h"

#include <algorithm>
#include <functional>
#include <map>
#include <utility>

#include "cluster/message_split.h"
#include "cluster/partition.h"

namespace trainwatch::cluster {
namespace {

uint64_t CountPoints(const v1::RunBatch& batch) {
  uint64_t n = 0;
  for (const v1::MetricColumn& c : batch.metrics()) n += c.values_size();
  return n;
}

// Messages read per fetch, and how long a fetch waits for the first one.
constexpr int kFetchMax = 256;
constexpr int64_t kFetchWaitMs = 1000;
// Empty fetches in a row, while the stream holds more than was applied, after which the applier
// starts a new consumer.
constexpr int kStuckFetches = 3;
// After NATS or the engine refused something, the applier tries again after this.
constexpr double kRetrySeconds = 1;

// The key of the cluster's settings bucket that holds its partition count.
constexpr const char* kPartitionsKey = "partitions";

// Joining retries what fails while NATS is not reachable yet or its servers have not elected
// their metadata leader (a replicated stream or bucket cannot be created before), for this long.
constexpr double kJoinSeconds = 60;
constexpr double kJoinRetrySeconds = 0.5;

// The snapshot loop looks at the newest snapshot's age this often (at most).
constexpr double kSnapshotCheckSeconds = 60;

// Runs `step` until it succeeds, is refused (InvalidArgument), or kJoinSeconds have passed.
Status RetryFor(Clock& clock, Logger& log, const char* what, const std::function<Status()>& step) {
  const int64_t deadline = clock.MonotonicNanos() + static_cast<int64_t>(kJoinSeconds * 1e9);
  bool told = false;
  Mutex mu;
  std::condition_variable cv;
  for (;;) {
    Status s = step();
    if (s.ok() || s.code() == StatusCode::kInvalidArgument) return s.WithContext(what);
    if (clock.MonotonicNanos() >= deadline) return s.WithContext(what);
    if (!told) log.Info("waiting for the NATS cluster", {{"step", what}, {"error", s.ToString()}});
    told = true;
    MutexLock lock(mu);
    clock.WaitFor(lock.native(), cv, kJoinRetrySeconds, [] { return false; });
  }
}

StreamSpec IngestStreamSpec(const ClusterNodeOptions& options) {
  StreamSpec spec;
  spec.name = options.stream;
  spec.subjects = {kIngestSubjects};
  spec.replicas = options.replicas;
  spec.max_age_ms = static_cast<int64_t>(options.stream_max_age_seconds * 1000);
  return spec;
}

SnapshotStoreOptions SnapshotOptions(const ClusterNodeOptions& options) {
  SnapshotStoreOptions snapshot_options;
  snapshot_options.replicas = options.replicas;
  return snapshot_options;
}

}  // namespace

ClusterNode::ClusterNode(const ClusterNodeOptions& options, storage::Engine& engine, Clock& clock,
                         Logger& logger, MetricsRegistry& metrics)
    : options_(options),
      engine_(engine),
      clock_(clock),
      log_(logger),
      queues_(std::max(1, options.publish_threads)),
      owned_(options.partitions, false),
      owners_(options.partitions),
      published_(metrics.AddCounter("trainwatch_cluster_published_total",
                                    "Partition messages published to the ingest stream.")),
      publish_failures_(metrics.AddCounter(
          "trainwatch_cluster_publish_failures_total",
          "Writes refused because JetStream did not acknowledge a part (HTTP 503).")),
      duplicates_(metrics.AddCounter(
          "trainwatch_cluster_duplicates_total",
          "Partition messages JetStream acknowledged as duplicates (a resent batch).")),
      applied_messages_(metrics.AddCounter("trainwatch_cluster_applied_total",
                                           "Stream messages applied to this node's store.")),
      stream_gaps_(metrics.AddCounter(
          "trainwatch_cluster_stream_gap_messages_total",
          "Ingest-stream messages removed (max_age) before this node applied them: its store "
          "misses them (rebuild it on an empty data directory).")),
      snapshots_published_(metrics.AddCounter("trainwatch_cluster_snapshots_published_total",
                                              "Store snapshots this node published.")) {
  metrics.AddGauge("trainwatch_cluster_partitions", "Partitions of the cluster.",
                   [n = options.partitions] { return static_cast<double>(n); });
  metrics.AddGauge("trainwatch_cluster_partitions_owned",
                   "Partitions this node owns (sends alert notifications for).",
                   [this] { return static_cast<double>(OwnedPartitions().size()); });
  metrics.AddGauge("trainwatch_cluster_applied_sequence",
                   "The last ingest-stream sequence applied to this node's store.",
                   [this] { return static_cast<double>(applied_.load()); });
  metrics.AddGauge("trainwatch_cluster_members",
                   "Live members of the cluster (nodes heartbeating), as of the last refresh.",
                   [this] {
                     MutexLock lock(mu_);
                     return static_cast<double>(members_.size());
                   });
  metrics.AddGauge("trainwatch_cluster_stream_last_sequence",
                   "The ingest stream's last sequence, as of the last refresh.", [this] {
                     MutexLock lock(mu_);
                     return static_cast<double>(stream_last_sequence_);
                   });
  metrics.AddGauge("trainwatch_cluster_consumer_lag",
                   "Stream messages this node has still to apply (the stream's last sequence, as "
                   "of the last refresh, less the applied one).",
                   [this] { return static_cast<double>(View().consumer_lag()); });
}

Result<std::unique_ptr<ClusterNode>> ClusterNode::Connect(const ClusterNodeOptions& options,
                                                          storage::Engine& engine, Clock& clock,
                                                          Logger& logger,
                                                          MetricsRegistry& metrics) {
  if (options.node_name.empty()) return Status::InvalidArgument("cluster mode needs a node name");
  if (options.partitions == 0) return Status::InvalidArgument("partitions must be positive");
  std::unique_ptr<ClusterNode> node(new ClusterNode(options, engine, clock, logger, metrics));
  ClusterNode& n = *node;
  TW_RETURN_IF_ERROR(n.RetryJoin("connect to NATS", [&]() -> Status {
    JetStreamOptions js_options;
    js_options.servers = options.servers;
    js_options.connection_name = "trainwatch " + options.node_name;
    TW_ASSIGN_OR_RETURN(n.js_, JetStream::Connect(js_options));
    return Status::Ok();
  }));
  TW_RETURN_IF_ERROR(n.RetryJoin("the ingest stream", [&]() -> Status {
    return n.js_->EnsureStream(IngestStreamSpec(options));  // PrepareStore set its max_age
  }));
  TW_RETURN_IF_ERROR(n.RetryJoin("the snapshot stream and bucket", [&]() -> Status {
    TW_ASSIGN_OR_RETURN(std::unique_ptr<SnapshotStore> snapshots,
                        SnapshotStore::Open(*n.js_, PosixFileSystem(), SnapshotOptions(options)));
    MutexLock lock(n.snapshot_mu_);
    n.snapshots_ = std::move(snapshots);
    return Status::Ok();
  }));
  // The partition count is the cluster's, fixed by the first node: a node that disagrees would
  // put runs in other partitions than the rest.
  const std::string mine = std::to_string(options.partitions);
  TW_RETURN_IF_ERROR(n.RetryJoin("the cluster's settings", [&]() -> Status {
    TW_ASSIGN_OR_RETURN(std::unique_ptr<KeyValue> settings,
                        n.js_->OpenKeyValue({"tw_cluster", options.replicas, 0}));
    Result<uint64_t> created = settings->Create(kPartitionsKey, mine);
    if (created.ok()) return Status::Ok();
    if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
    TW_ASSIGN_OR_RETURN(KeyValueEntry entry, settings->Get(kPartitionsKey));
    if (entry.value != mine) {
      return Status::InvalidArgument("--partitions " + mine + ": this cluster has " + entry.value +
                                     " partitions (give the same number or omit it)");
    }
    return Status::Ok();
  }));
  const auto lease_ms = static_cast<int64_t>(options.lease_seconds * 1000);
  TW_RETURN_IF_ERROR(n.RetryJoin("the membership and lease buckets", [&]() -> Status {
    TW_ASSIGN_OR_RETURN(n.members_kv_,
                        n.js_->OpenKeyValue({"tw_members", options.replicas, lease_ms}));
    TW_ASSIGN_OR_RETURN(n.leases_kv_,
                        n.js_->OpenKeyValue({"tw_leases", options.replicas, lease_ms}));
    return Status::Ok();
  }));
  node->membership_ = std::make_unique<Membership>(node->members_kv_.get(), options.node_name);
  node->leases_ = std::make_unique<PartitionLeases>(node->leases_kv_.get(), options.node_name);
  node->balancer_ = std::make_unique<PartitionBalancer>(node->membership_.get(),
                                                        node->leases_.get(), options.partitions);
  node->applied_ = node->LastAppliedSequence();
  node->start_applied_ = node->applied_.load();
  // The stream must still hold every message after what the store holds (PrepareStore installed
  // a snapshot if it did not; this catches what the log replay brought in too).
  Result<StreamState> state = Status::Unavailable("not read");
  TW_RETURN_IF_ERROR(n.RetryJoin("the ingest stream's state", [&]() -> Status {
    state = n.js_->GetStreamState(options.stream);
    return state.status();
  }));
  const uint64_t needed = node->applied_.load() + 1;
  if (state->last_sequence >= needed && state->first_sequence > needed) {
    return Status::InvalidArgument(
        "this node's store ends at ingest-stream sequence " + std::to_string(needed - 1) +
        " but the stream starts at " + std::to_string(state->first_sequence) +
        " (messages before it were removed: --cluster-stream-max-age); start the node on an empty "
        "data directory to rebuild it from the cluster's store snapshot");
  }
  node->join_last_sequence_ = state->last_sequence;
  logger.Info("joined the cluster", {{"node", options.node_name},
                                     {"nats", node->js_->ConnectedUrl()},
                                     {"partitions", static_cast<uint64_t>(options.partitions)},
                                     {"applied_sequence", node->applied_.load()}});
  return node;
}

ClusterNode::~ClusterNode() { Stop(); }

Status ClusterNode::RetryJoin(const char* what, const std::function<Status()>& step) {
  const int64_t deadline = clock_.MonotonicNanos() + static_cast<int64_t>(kJoinSeconds * 1e9);
  bool told = false;
  for (;;) {
    Status s = step();
    // A refusal (a mismatching stream, another partition count) will not change by waiting.
    if (s.ok() || s.code() == StatusCode::kInvalidArgument) return s.WithContext(what);
    if (clock_.MonotonicNanos() >= deadline) return s.WithContext(what);
    if (!told) log_.Info("waiting for the NATS cluster", {{"step", what}, {"error", s.ToString()}});
    told = true;
    if (WaitOrStop(kJoinRetrySeconds)) return Status::Unavailable("server is shutting down");
  }
}

void ClusterNode::Run() {
  size_t publishers = 0;
  {
    MutexLock lock(mu_);
    if (running_ || stop_) return;
    running_ = true;
    publishers = queues_.size();  // fixed at construction
  }
  for (size_t i = 0; i < publishers; ++i) {
    publishers_.emplace_back([this, i] { PublishLoop(i); });
  }
  applier_ = std::thread([this] { ApplyLoop(); });
  balancer_thread_ = std::thread([this] { BalanceLoop(); });
  observer_thread_ = std::thread([this] { ObserveLoop(); });
  snapshot_thread_ = std::thread([this] { SnapshotLoop(); });
}

void ClusterNode::Stop() {
  {
    MutexLock lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  queue_cv_.notify_all();
  for (std::thread& t : publishers_) t.join();  // they drain the queue first
  if (applier_.joinable()) applier_.join();
  if (balancer_thread_.joinable()) balancer_thread_.join();
  if (observer_thread_.joinable()) observer_thread_.join();
  if (snapshot_thread_.joinable()) snapshot_thread_.join();
  {
    MutexLock lock(mu_);  // jobs queued when nothing ran (Run was never called)
    for (std::deque<PublishJob>& queue : queues_) {
      for (PublishJob& job : queue) {
        job.done(Status::Unavailable("server is shutting down"), storage::WriteOutcome{});
      }
      queue.clear();
    }
    queued_ = 0;
    owned_.assign(owned_.size(), false);
  }
  // Hand the partitions over now rather than when the leases expire (not while NATS is
  // unreachable: each attempt would wait for its timeout, and the leases expire anyway).
  if (!leases_ || js_->ConnectedUrl().empty()) return;
  std::vector<uint32_t> held;
  for (const auto& [p, revision] : leases_->held()) held.push_back(p);
  for (uint32_t p : held) (void)leases_->Release(p);
  (void)membership_->Leave();
}

void ClusterNode::Publish(v1::WriteRequest request, storage::Engine::WriteCallback done) {
  {
    MutexLock lock(mu_);
    if (stop_) {
      lock.Unlock();
      done(Status::Unavailable("server is shutting down"), storage::WriteOutcome{});
      return;
    }
    if (queued_ >= options_.max_queued_publishes) {
      lock.Unlock();
      publish_failures_.Add();
      done(Status::Unavailable("too many writes are waiting for the cluster's acknowledgement"),
           storage::WriteOutcome{});
      return;
    }
    // A writer's requests in one queue; requests without a writer id by their first run.
    std::string key = request.writer_id();
    if (key.empty() && request.runs_size() > 0)
      key = request.runs(0).project() + "\x1f" + request.runs(0).run();
    const size_t queue = std::hash<std::string>()(key) % queues_.size();
    queues_[queue].push_back({std::move(request), std::move(done)});
    ++queued_;
  }
  queue_cv_.notify_all();
}

void ClusterNode::PublishLoop(size_t queue) {
  for (;;) {
    PublishJob job;
    {
      MutexLock lock(mu_);
      std::deque<PublishJob>& mine = queues_[queue];
      queue_cv_.wait(lock.native(), [&]() TW_REQUIRES(mu_) { return stop_ || !mine.empty(); });
      if (mine.empty()) return;  // stopping, and drained
      job = std::move(mine.front());
      mine.pop_front();
      --queued_;
    }
    PublishNow(std::move(job));
  }
}

void ClusterNode::PublishNow(PublishJob job) {
  // The request's run batches by partition, in their order within each.
  std::map<uint32_t, v1::WriteRequest> parts;
  for (v1::RunBatch& batch : *job.request.mutable_runs()) {
    v1::WriteRequest& part = parts[PartitionOfRun(batch.project(), batch.run())];
    *part.add_runs() = std::move(batch);
  }
  const std::string& writer = job.request.writer_id();
  storage::WriteOutcome outcome;
  bool all_duplicates = !writer.empty() && !parts.empty();
  // A message is at most the server's max_payload: a larger part goes as several, each leaving
  // room for the headers, the writer id and the sequence (message_split.h).
  const size_t max_payload = js_->MaxPayload();
  const size_t limit = max_payload - std::min<size_t>(max_payload / 2, 8 * 1024);
  for (auto& [p, part] : parts) {
    Result<std::vector<v1::WriteRequest>> pieces = SplitForMessages(part, limit);
    if (!pieces.ok()) {
      publish_failures_.Add();
      job.done(pieces.status(), storage::WriteOutcome{});
      return;
    }
    for (size_t k = 0; k < pieces->size(); ++k) {
      v1::WriteRequest& piece = (*pieces)[k];
      piece.set_writer_id(writer);
      piece.set_sequence(job.request.sequence());
      const std::string data = piece.SerializeAsString();
      // Without a writer id there is no batch identity to de-duplicate on (as single-node). A
      // part sent as several messages numbers them; the cut is the same for a resent batch.
      std::string id;
      if (!writer.empty()) {
        id = writer + ":" + std::to_string(job.request.sequence()) + ":p" + std::to_string(p);
        if (pieces->size() > 1) id += ":" + std::to_string(k);
      }
      Result<PublishAck> ack = js_->Publish(IngestSubject(p), data, id);
      if (!ack.ok()) {
        publish_failures_.Add();
        job.done(ack.status().WithContext("the cluster did not acknowledge the write"),
                 storage::WriteOutcome{});
        return;
      }
      published_.Add();
      if (ack->duplicate) duplicates_.Add();
      all_duplicates = all_duplicates && ack->duplicate;
      for (const v1::RunBatch& batch : piece.runs()) outcome.points_written += CountPoints(batch);
    }
  }
  outcome.duplicate_batch = all_duplicates;
  if (all_duplicates) outcome.points_written = 0;
  job.done(Status::Ok(), outcome);
}

Status ClusterNode::Health() const {
  MutexLock lock(mu_);
  return store_gap_;
}

uint64_t ClusterNode::LastAppliedSequence() const {
  const std::string writer = applier_writer();
  if (!engine_.IsDuplicate(writer, 1)) return 0;
  // IsDuplicate(writer, s) holds exactly for s <= the last applied sequence.
  uint64_t low = 1, high = 2;  // IsDuplicate(low), and high to be found above it
  while (engine_.IsDuplicate(writer, high)) {
    low = high;
    high *= 2;
  }
  while (high - low > 1) {
    const uint64_t mid = low + (high - low) / 2;
    (engine_.IsDuplicate(writer, mid) ? low : high) = mid;
  }
  return low;
}

bool ClusterNode::WaitOrStop(double seconds) {
  MutexLock lock(mu_);
  return clock_.WaitFor(lock.native(), cv_, seconds, [&]() TW_REQUIRES(mu_) { return stop_; });
}

void ClusterNode::ApplyLoop() {
  std::unique_ptr<StreamReader> reader;
  bool warned = false;
  int idle_behind = 0;   // empty fetches in a row while the stream holds more than was applied
  int stuck_rounds = 0;  // times idle_behind reached kStuckFetches without a message since
  bool caught_up = applied_.load() >= join_last_sequence_;
  if (caught_up) {
    log_.Info("caught up with the ingest stream", {{"from_sequence", start_applied_ + 1},
                                                   {"applied_sequence", applied_.load()},
                                                   {"messages", static_cast<uint64_t>(0)}});
  }
  for (;;) {
    {
      MutexLock lock(mu_);
      if (stop_) return;
    }
    if (!reader) {
      Result<std::unique_ptr<StreamReader>> opened =
          StreamReader::Open(*js_, options_.stream, kIngestSubjects, applied_.load(),
                             {.durable = "apply-" + options_.node_name,
                              .replicas = options_.replicas,
                              .contiguous = true});
      if (!opened.ok()) {
        if (!warned)
          log_.Warn("cannot read the ingest stream", {{"error", opened.status().ToString()}});
        warned = true;
        if (WaitOrStop(kRetrySeconds)) return;
        continue;
      }
      reader = std::move(opened).value();
    }
    Result<std::vector<StreamMessage>> messages = reader->Next(kFetchMax, kFetchWaitMs);
    if (!messages.ok()) {  // the reader starts a new consumer at the same position next time
      if (!warned)
        log_.Warn("reading the ingest stream", {{"error", messages.status().ToString()}});
      warned = true;
      if (WaitOrStop(kRetrySeconds)) return;
      continue;
    }
    if (messages->empty()) {
      // Nothing came, yet the stream holds more than was applied (as of the view's last read):
      // the consumer may sit on a server that died, where a fetch just times out. Start a new
      // one at the same position after a few such fetches.
      bool behind = false;
      {
        MutexLock lock(mu_);
        behind = stream_last_sequence_ > applied_.load();
      }
      idle_behind = behind ? idle_behind + 1 : 0;
      if (idle_behind >= kStuckFetches) {
        // First subscribe again to the same consumer; if that brings nothing either, create
        // the consumer again at the applied position.
        const bool recreate = ++stuck_rounds > 1;
        log_.Warn(recreate
                      ? "the ingest stream's consumer still brings nothing while the stream holds "
                        "more; creating it again"
                      : "the ingest stream's consumer brings nothing while the stream holds more; "
                        "subscribing again",
                  {{"applied_sequence", applied_.load()}});
        if (recreate) {
          reader->DropConsumer();
          stuck_rounds = 0;
        }
        reader.reset();
        idle_behind = 0;
      }
      continue;
    }
    idle_behind = 0;
    stuck_rounds = 0;
    if (warned) log_.Info("reading the ingest stream again");
    warned = false;
    if (const uint64_t first = messages->front().sequence; first > applied_.load() + 1) {
      // Removed by max_age before this node read them (it was down, or far behind).
      const uint64_t missing = first - applied_.load() - 1;
      stream_gaps_.Add(missing);
      log_.Error(
          "ingest-stream messages were removed before this node applied them: its store misses "
          "them (start it on an empty data directory to rebuild it from a snapshot)",
          {{"from_sequence", applied_.load() + 1}, {"to_sequence", first - 1}});
      MutexLock lock(mu_);
      if (store_gap_.ok()) {
        store_gap_ = Status::Unavailable(
            "this node's store misses ingest-stream messages " +
            std::to_string(applied_.load() + 1) + " to " + std::to_string(first - 1) +
            ", removed (max age) before it applied them; restart it on an empty data directory "
            "to rebuild it from the cluster's snapshot");
      }
    }
    Status applied_status;
    {
      MutexLock pause(apply_mu_);  // a snapshot copies the store between two fetches
      applied_status = ApplyMessages(*messages);
      if (applied_status.ok()) applied_ = messages->back().sequence;
    }
    if (!applied_status.ok()) {
      // What was applied is a prefix (a refused write fences the ones after it): start again
      // after it once the engine takes writes.
      log_.Error("applying the ingest stream", {{"error", applied_status.ToString()}});
      reader.reset();
      applied_ = LastAppliedSequence();
      if (WaitOrStop(kRetrySeconds)) return;
      continue;
    }
    if (!caught_up && applied_.load() >= join_last_sequence_) {
      caught_up = true;
      log_.Info("caught up with the ingest stream",
                {{"from_sequence", start_applied_ + 1},
                 {"applied_sequence", applied_.load()},
                 {"messages", applied_.load() - start_applied_}});
    }
  }
}

Status ClusterNode::ApplyMessages(const std::vector<StreamMessage>& messages) {
  struct Pending {
    Mutex mu;
    std::condition_variable cv;
    size_t left TW_GUARDED_BY(mu) = 0;
    Status first_error TW_GUARDED_BY(mu);
  };
  auto pending = std::make_shared<Pending>();
  {
    MutexLock lock(pending->mu);
    pending->left = messages.size();
  }
  const std::string writer = applier_writer();
  for (const StreamMessage& m : messages) {
    v1::WriteRequest request;
    if (!request.ParseFromString(m.data)) {
      // Not ours (nothing else publishes on these subjects): applied as an empty request, so
      // that the sequence still moves on.
      log_.Error("a message of the ingest stream is not a WriteRequest; skipped",
                 {{"sequence", m.sequence}, {"subject", m.subject}});
      request.Clear();
    }
    request.set_writer_id(writer);
    request.set_sequence(m.sequence);
    engine_.Write(std::move(request),
                  [pending](const Status& status, const storage::WriteOutcome&) {
                    MutexLock lock(pending->mu);
                    if (!status.ok() && pending->first_error.ok()) pending->first_error = status;
                    if (--pending->left == 0) pending->cv.notify_all();
                  });
  }
  MutexLock lock(pending->mu);
  pending->cv.wait(lock.native(), [&]() TW_REQUIRES(pending->mu) { return pending->left == 0; });
  applied_messages_.Add(messages.size());
  return pending->first_error;
}

Result<StoreBootstrapReport> ClusterNode::PrepareStore(const ClusterNodeOptions& options,
                                                       const std::string& data_dir, FileSystem& fs,
                                                       Clock& clock, Logger& logger) {
  std::unique_ptr<JetStream> js;
  TW_RETURN_IF_ERROR(RetryFor(clock, logger, "connect to NATS", [&]() -> Status {
    JetStreamOptions js_options;
    js_options.servers = options.servers;
    js_options.connection_name = "trainwatch " + options.node_name + " (start)";
    TW_ASSIGN_OR_RETURN(js, JetStream::Connect(js_options));
    return Status::Ok();
  }));
  std::unique_ptr<SnapshotStore> snapshots;
  TW_RETURN_IF_ERROR(RetryFor(clock, logger, "the ingest and snapshot streams", [&]() -> Status {
    bool changed = false;
    TW_RETURN_IF_ERROR(js->EnsureStream(IngestStreamSpec(options), &changed));
    if (changed) {
      logger.Warn(
          "the ingest stream's max_age was changed to this node's --cluster-stream-max-age",
          {{"stream", options.stream}, {"max_age_seconds", options.stream_max_age_seconds}});
    }
    TW_ASSIGN_OR_RETURN(snapshots, SnapshotStore::Open(*js, fs, SnapshotOptions(options)));
    return Status::Ok();
  }));
  StoreBootstrapOptions bootstrap;
  bootstrap.data_dir = data_dir;
  bootstrap.stream = options.stream;
  bootstrap.writer = "cluster/" + options.stream;
  Result<StoreBootstrapReport> report = Status::Unavailable("not run");
  TW_RETURN_IF_ERROR(RetryFor(clock, logger, "the store snapshot", [&]() -> Status {
    report = BootstrapStore(*js, snapshots.get(), fs, bootstrap, clock, logger);
    // A bad snapshot does not get better by downloading it again.
    if (report.status().code() == StatusCode::kCorruption) {
      return Status::InvalidArgument(report.status().message());
    }
    return report.status();
  }));
  return report;
}

Result<SnapshotManifest> ClusterNode::TakeSnapshot() {
  MutexLock one(snapshot_mu_);
  if (!snapshots_) return Status::Unavailable("the snapshot stream is not open");
  if (options_.snapshot_dir.empty()) return Status::InvalidArgument("no snapshot directory");
  FileSystem& fs = PosixFileSystem();
  const int64_t started = clock_.MonotonicNanos();
  const auto created_ms = static_cast<uint64_t>(clock_.NowUnixSeconds() * 1000);
  const std::string dir = options_.snapshot_dir + "/taking";
  // A copy a crash left behind (flat: RocksDB's checkpoint makes no subdirectories).
  if (fs.Exists(dir)) {
    TW_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.ListDir(dir));
    for (const std::string& name : names) TW_RETURN_IF_ERROR(fs.RemoveFile(dir + "/" + name));
    TW_RETURN_IF_ERROR(fs.RemoveDir(dir));
  }
  TW_RETURN_IF_ERROR(fs.CreateDirs(options_.snapshot_dir));
  {
    MutexLock pause(apply_mu_);  // nothing is applied while the store is copied
    TW_RETURN_IF_ERROR(engine_.SnapshotStore(dir).WithContext("copying the store"));
  }
  auto cleanup = [&] {
    Result<std::vector<std::string>> names = fs.ListDir(dir);
    if (names.ok()) {
      for (const std::string& name : *names) (void)fs.RemoveFile(dir + "/" + name);
    }
    (void)fs.RemoveDir(dir);
  };
  // What the copy covers is read from the copy itself.
  Result<StoreMarks> marks = ReadStoreMarks(dir, applier_writer());
  if (!marks.ok()) {
    cleanup();
    return marks.status().WithContext("reading the store copy");
  }
  SnapshotManifest manifest;
  manifest.node = options_.node_name;
  manifest.stream = options_.stream;
  manifest.covered_sequence = marks->sequence;
  manifest.checkpoint_lsn = marks->checkpoint_lsn;
  manifest.created_unix = static_cast<double>(created_ms) / 1000;
  manifest.id =
      options_.node_name + "-" + std::to_string(marks->sequence) + "-" + std::to_string(created_ms);
  Result<SnapshotManifest> published = snapshots_->Publish(dir, std::move(manifest));
  cleanup();
  if (!published.ok()) return published.status().WithContext("publishing a store snapshot");
  snapshots_published_.Add();
  log_.Info("published a store snapshot",
            {{"snapshot", published->id},
             {"covered_sequence", published->covered_sequence},
             {"bytes", published->total_bytes()},
             {"files", static_cast<uint64_t>(published->files.size())},
             {"pieces", published->pieces()},
             {"seconds", static_cast<double>(clock_.MonotonicNanos() - started) / 1e9}});
  return published;
}

void ClusterNode::SnapshotLoop() {
  if (options_.snapshot_interval_seconds <= 0) return;
  const double check_seconds = std::min(kSnapshotCheckSeconds, options_.snapshot_interval_seconds);
  // With no snapshot in the cluster yet, the first one comes an interval after this node began
  // to hold partition 0 (not at once: a cluster's first minutes are its busiest to copy).
  double holding_since = 0;
  for (;;) {
    if (WaitOrStop(check_seconds)) return;
    {
      MutexLock lock(mu_);
      if (owned_.empty() || !owned_[0]) {
        holding_since = 0;
        continue;
      }
    }
    if (holding_since == 0) holding_since = clock_.NowUnixSeconds();
    double newest_created = holding_since;
    uint64_t newest_covered = 0;
    {
      MutexLock one(snapshot_mu_);
      if (!snapshots_) continue;
      Result<SnapshotManifest> latest = snapshots_->Latest();
      if (latest.ok()) {
        newest_created = latest->created_unix;
        newest_covered = latest->covered_sequence;
      } else if (latest.status().code() != StatusCode::kNotFound) {
        continue;  // NATS unreachable: next time
      }
    }
    if (applied_.load() <= newest_covered) continue;  // nothing new to cover
    if (clock_.NowUnixSeconds() - newest_created < options_.snapshot_interval_seconds) continue;
    Result<SnapshotManifest> taken = TakeSnapshot();
    if (!taken.ok() && taken.status().code() != StatusCode::kAlreadyExists) {
      log_.Warn("taking a store snapshot", {{"error", taken.status().ToString()}});
    }
  }
}

void ClusterNode::BalanceLoop() {
  const double step_seconds = options_.lease_seconds / 4;
  int64_t last_ok = clock_.MonotonicNanos();
  bool warned = false;
  for (;;) {
    Result<PartitionBalancer::Changes> changes = balancer_->Step();
    const int64_t now = clock_.MonotonicNanos();
    std::vector<uint32_t> gained;
    {
      MutexLock lock(mu_);
      const std::vector<bool> before = owned_;
      if (changes.ok()) {
        last_ok = now;
        members_ = changes->members;
        owned_.assign(owned_.size(), false);
        for (const auto& [p, revision] : leases_->held()) {
          if (p < owned_.size()) owned_[p] = true;
        }
      } else if (static_cast<double>(now - last_ok) / 1e9 > options_.lease_seconds * 0.75) {
        // Not renewed in time: another node may hold them by now.
        owned_.assign(owned_.size(), false);
      }
      for (uint32_t p = 0; p < owned_.size(); ++p) {
        if (owned_[p] && !before[p]) gained.push_back(p);
      }
    }
    if (!gained.empty() && on_gained_) on_gained_(gained);
    if (changes.ok()) {
      if (warned) log_.Info("partition leases renewed again");
      warned = false;
      for (uint32_t p : changes->gained)
        log_.Info("partition gained", {{"partition", static_cast<uint64_t>(p)}});
      for (uint32_t p : changes->lost)
        log_.Info("partition lost", {{"partition", static_cast<uint64_t>(p)}});
    } else if (!warned) {
      log_.Warn("cannot renew partition leases", {{"error", changes.status().ToString()}});
      warned = true;
    }
    if (WaitOrStop(step_seconds)) return;
  }
}

bool ClusterNode::OwnsRun(const std::string& project, const std::string& run) const {
  const uint32_t p = PartitionOfRun(project, run);
  MutexLock lock(mu_);
  return owned_[p];
}

uint32_t ClusterNode::PartitionOfRun(const std::string& project, const std::string& run) const {
  return PartitionOf(project.empty() ? "default" : project, run, options_.partitions);
}

void ClusterNode::ObserveLoop() {
  const double step_seconds = options_.lease_seconds / 4;
  bool warned = false;
  for (;;) {
    Status s = RefreshView();
    if (!s.ok() && !warned) log_.Warn("cannot read the cluster's state", {{"error", s.ToString()}});
    if (s.ok() && warned) log_.Info("reading the cluster's state again");
    warned = !s.ok();
    if (WaitOrStop(step_seconds)) return;
  }
}

Status ClusterNode::RefreshView() {
  // The view keeps its last values when a read fails (NATS unreachable, a bucket or the stream
  // without a leader); the first failure ends the round, so that an outage costs one timeout.
  // (The members are the balancer's: each step lists them.) The lease bucket read directly, a
  // key per partition: PartitionLeases is the balancer thread's.
  std::vector<std::string> owners(options_.partitions);
  for (uint32_t p = 0; p < options_.partitions; ++p) {
    Result<KeyValueEntry> entry = leases_kv_->Get(PartitionLeases::Key(p));
    if (entry.ok()) {
      owners[p] = std::move(entry->value);
    } else if (entry.status().code() != StatusCode::kNotFound) {
      return entry.status().WithContext("partition leases");
    }
  }
  {
    MutexLock lock(mu_);
    owners_ = std::move(owners);
  }
  Result<StreamState> stream = js_->GetStreamState(options_.stream);
  if (!stream.ok()) return stream.status();
  MutexLock lock(mu_);
  stream_last_sequence_ = stream->last_sequence;
  stream_leader_ = stream->leader;
  refreshed_unix_ = clock_.NowUnixSeconds();
  return Status::Ok();
}

ClusterView ClusterNode::View() const {
  ClusterView view;
  view.node = options_.node_name;
  view.partitions = options_.partitions;
  view.stream = options_.stream;
  view.nats_connected = !js_->ConnectedUrl().empty();
  view.applied_sequence = applied_.load();
  MutexLock lock(mu_);
  view.members = members_;
  view.owners = owners_;
  view.stream_last_sequence = stream_last_sequence_;
  view.stream_leader = stream_leader_;
  view.refreshed_unix = refreshed_unix_;
  for (uint32_t p = 0; p < owned_.size(); ++p) {
    if (owned_[p]) view.owned.push_back(p);
  }
  return view;
}

std::vector<uint32_t> ClusterNode::OwnedPartitions() const {
  MutexLock lock(mu_);
  std::vector<uint32_t> out;
  for (uint32_t p = 0; p < owned_.size(); ++p) {
    if (owned_[p]) out.push_back(p);
  }
  return out;
}

}  // namespace trainwatch::cluster
