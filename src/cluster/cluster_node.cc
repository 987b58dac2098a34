#include "cluster/cluster_node.h"

#include <algorithm>
#include <functional>
#include <map>
#include <utility>

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
                                           "Stream messages applied to this node's store.")) {
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
    StreamSpec spec;
    spec.name = options.stream;
    spec.subjects = {kIngestSubjects};
    spec.replicas = options.replicas;
    return n.js_->EnsureStream(spec);
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
  for (auto& [p, part] : parts) {
    part.set_writer_id(writer);
    part.set_sequence(job.request.sequence());
    const std::string data = part.SerializeAsString();
    // Without a writer id there is no batch identity to de-duplicate on (as single-node).
    const std::string id = writer.empty() ? std::string()
                                          : writer + ":" + std::to_string(job.request.sequence()) +
                                                ":p" + std::to_string(p);
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
    for (const v1::RunBatch& batch : part.runs()) outcome.points_written += CountPoints(batch);
  }
  outcome.duplicate_batch = all_duplicates;
  if (all_duplicates) outcome.points_written = 0;
  job.done(Status::Ok(), outcome);
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
    if (Status s = ApplyMessages(*messages); !s.ok()) {
      // What was applied is a prefix (a refused write fences the ones after it): start again
      // after it once the engine takes writes.
      log_.Error("applying the ingest stream", {{"error", s.ToString()}});
      reader.reset();
      applied_ = LastAppliedSequence();
      if (WaitOrStop(kRetrySeconds)) return;
      continue;
    }
    applied_ = messages->back().sequence;
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

bool ClusterNode::Owns(const v1::WriteRequest& request) const {
  if (request.runs_size() == 0) return false;
  const v1::RunBatch& batch = request.runs(0);
  const uint32_t p = PartitionOfRun(batch.project(), batch.run());
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
