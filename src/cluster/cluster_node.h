// One trainwatch server's part in a cluster (docs/cluster.md): the write path into JetStream, the
// applier that feeds the node's own embedded engine from the stream, and the partition ownership
// that decides which node notifies for which runs (every node detects every run).
//
// - Publish (the Ingestor's sink in cluster mode): a validated, normalised WriteRequest is split
//   by partition (PartitionOf(project, run)) and each part is published to `tw.ingest.p<N>` with
//   the message id "<writer id>:<sequence>:p<N>", so that a resent batch (to this node or
//   another, within the stream's duplicate window) is stored once. The write is acknowledged
//   once JetStream acknowledged every part (stored on a quorum of replicas); a NATS that cannot
//   be reached is Unavailable (HTTP 503, gRPC UNAVAILABLE: the SDK spools and resends).
// - The applier reads the whole stream in order and writes every message to the engine as writer
//   "cluster/<stream>" with the stream sequence as its sequence: the engine's per-writer
//   sequences make a message applied twice (after a restart, or a reader started again) a no-op,
//   and tell the applier where to resume. Every node applies every partition, so every node's
//   store answers every query (the read side of "any node answers any query").
// - Ownership: a PartitionBalancer step every quarter of the lease keeps this node's share of
//   the partitions (leases in a KV bucket); OwnsRun() says whether a run's partition is owned:
//   the server notifies about its alerts, watches its liveness and reports on it (docs/cluster.md).
//
// Thread-safety: Publish, OwnsRun and the accessors may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/jetstream.h"
#include "cluster/key_value.h"
#include "cluster/membership.h"
#include "cluster/partition_balancer.h"
#include "cluster/partition_leases.h"
#include "cluster/snapshot.h"
#include "cluster/store_bootstrap.h"
#include "cluster/stream_reader.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "common/mutex.h"
#include "common/status.h"
#include "storage/engine.h"

namespace trainwatch::cluster {

struct ClusterNodeOptions {
  std::vector<std::string> servers;  // nats:// URLs
  std::string node_name;             // unique in the cluster: [A-Za-z0-9_-]
  uint32_t partitions = 16;          // fixed for the life of the cluster (checked at join)
  // A node that stops renewing its leases loses its partitions after this; its key in the
  // members bucket expires after it too. Every node of a cluster must use the same value (the
  // buckets' TTL is set by the first node).
  double lease_seconds = 10;
  int replicas = 3;
  std::string stream = "TRAINWATCH_INGEST";
  int publish_threads = 4;
  size_t max_queued_publishes = 4096;  // more waiting than this: Unavailable
  // Bounded rebuild (docs/cluster.md): the ingest stream keeps a message this long (0: for
  // ever; set on creation, and on an existing stream by a stream update), and the holder of
  // partition 0's lease publishes a store snapshot once the newest is this old (0: only when
  // asked, TakeSnapshot). A store copy is made under snapshot_dir (on the store's file system:
  // its files are hard links) while it is published.
  double stream_max_age_seconds = 7 * 86400;
  double snapshot_interval_seconds = 3600;
  std::string snapshot_dir;  // required for snapshots: <data dir>/snapshots
};

// The subjects of the ingest stream: one per partition, under "tw.ingest.".
inline constexpr const char* kIngestSubjects = "tw.ingest.>";

// What a node knows of its cluster (GET /api/v1/info, /metrics). Membership, the partitions'
// owners and the stream's state are read from NATS every quarter of the lease, so they may be
// that old; `refreshed_unix` says when they were last all read.
struct ClusterView {
  std::string node;
  uint32_t partitions = 0;
  std::vector<std::string> members;  // live members (heartbeating), sorted
  std::vector<uint32_t> owned;       // the partitions this node holds, ascending
  // owners[p]: the node holding partition p's lease, "" when none does or it is not known yet.
  std::vector<std::string> owners;
  std::string stream;
  uint64_t stream_last_sequence = 0;
  std::string stream_leader;  // the server name of the stream's raft leader, "" when none
  uint64_t applied_sequence = 0;
  bool nats_connected = false;
  double refreshed_unix = 0;  // 0: never refreshed yet

  // The stream messages this node has still to apply (as of the last refresh).
  uint64_t consumer_lag() const {
    return stream_last_sequence > applied_sequence ? stream_last_sequence - applied_sequence : 0;
  }
};

class ClusterNode {
 public:
  // Connects, creates or checks the stream and buckets, and checks that the cluster's partition
  // count is `options.partitions`. Starts nothing: Run() does.
  static Result<std::unique_ptr<ClusterNode>> Connect(const ClusterNodeOptions& options,
                                                      storage::Engine& engine, Clock& clock,
                                                      Logger& logger, MetricsRegistry& metrics);
  // Before the engine opens (cluster/store_bootstrap.h): connects, creates or checks the ingest
  // stream (with its max_age) and the snapshot stream, and installs the cluster's newest store
  // snapshot into `data_dir` when the store there is empty or ends before the stream's first
  // message. InvalidArgument when the node cannot be made whole.
  static Result<StoreBootstrapReport> PrepareStore(const ClusterNodeOptions& options,
                                                   const std::string& data_dir, FileSystem& fs,
                                                   Clock& clock, Logger& logger);
  ~ClusterNode();  // Stop()
  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;

  // Called on the balancer thread with the partitions this node started to own (a lease gained,
  // or owned again after its renewals had failed for too long). Set before Run().
  void SetGainedListener(std::function<void(const std::vector<uint32_t>&)> on_gained) {
    on_gained_ = std::move(on_gained);
  }
  // The node's JetStream connection (other buckets use it, e.g. cluster/notified_record.h).
  JetStream& jetstream() { return *js_; }

  // Starts the publisher threads, the applier and the balancer.
  void Run();
  // Drains queued publishes, leaves the cluster (hands its partitions back at once) and stops.
  void Stop();

  // Publishes a validated, normalised request; `done` runs once, on a publisher thread, with the
  // points published (points_written) and whether every part was a duplicate.
  void Publish(v1::WriteRequest request, storage::Engine::WriteCallback done);

  // Whether this node holds the lease of the run's partition now.
  bool OwnsRun(const std::string& project, const std::string& run) const TW_EXCLUDES(mu_);
  uint32_t PartitionOfRun(const std::string& project, const std::string& run) const;
  std::vector<uint32_t> OwnedPartitions() const;
  // A copy of what this node knows of the cluster (never waits for NATS).
  ClusterView View() const;
  // Not ok once the applier found ingest-stream messages removed (max age) before this node
  // applied them: its store misses them until it is rebuilt (an empty data directory, then the
  // cluster's snapshot). For /healthz; never waits for NATS.
  Status Health() const TW_EXCLUDES(mu_);
  // The last stream sequence the engine applied.
  uint64_t applied_sequence() const { return applied_.load(); }
  const ClusterNodeOptions& options() const { return options_; }
  // The engine writer id the applier writes as.
  std::string applier_writer() const { return "cluster/" + options_.stream; }

  // Publishes a snapshot of this node's store (cluster/snapshot.h): the applier pauses while the
  // engine checkpoints and RocksDB copies the store (hard links), then the copy's files go to the
  // snapshot stream and its manifest to the bucket. AlreadyExists when a snapshot covering as much
  // is in place; Unavailable without NATS. One at a time per node (a second call waits).
  Result<SnapshotManifest> TakeSnapshot();

  // Runs `step` until it succeeds, is refused (InvalidArgument), or joining has taken too long
  // (60 s): for what a server sets up in the cluster as it starts (a bucket of its own), with the
  // patience of joining, since a NATS cluster may still be electing leaders.
  Status RetryJoin(const char* what, const std::function<Status()>& step);

 private:
  struct PublishJob {
    v1::WriteRequest request;
    storage::Engine::WriteCallback done;
  };

  ClusterNode(const ClusterNodeOptions& options, storage::Engine& engine, Clock& clock,
              Logger& logger, MetricsRegistry& metrics);
  void PublishLoop(size_t queue);
  void PublishNow(PublishJob job);
  void ApplyLoop();
  // Writes `messages` to the engine in order and waits for them; OK when all were applied.
  Status ApplyMessages(const std::vector<StreamMessage>& messages);
  void BalanceLoop();
  // Publishes a snapshot when this node holds partition 0 and the newest one is older than the
  // snapshot interval.
  void SnapshotLoop();
  // Refreshes the view every quarter of the lease, on its own thread: reads from NATS that time
  // out must not delay the balancer's renewals.
  void ObserveLoop();
  // Reads the partitions' owners and the stream's state into the view; the first read that
  // fails ends it (the view keeps its older values) and is returned.
  Status RefreshView();
  // The last sequence the engine applied as applier_writer(), found through IsDuplicate.
  uint64_t LastAppliedSequence() const;
  // Waits `seconds` or until Stop; true when stopping.
  bool WaitOrStop(double seconds);

  const ClusterNodeOptions options_;
  storage::Engine& engine_;
  Clock& clock_;
  Logger& log_;
  std::unique_ptr<JetStream> js_;
  std::unique_ptr<KeyValue> members_kv_;
  std::unique_ptr<KeyValue> leases_kv_;
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<PartitionLeases> leases_;  // the balancer thread's only
  std::unique_ptr<PartitionBalancer> balancer_;
  std::unique_ptr<SnapshotStore> snapshots_ TW_GUARDED_BY(snapshot_mu_);
  std::function<void(const std::vector<uint32_t>&)> on_gained_;  // set before Run

  // Held by the applier while it writes a fetch to the engine, and by TakeSnapshot while the
  // store is copied: the copy then matches the store's writer sequences exactly.
  Mutex apply_mu_;
  Mutex snapshot_mu_;  // one snapshot at a time; the snapshot store's calls
  mutable Mutex mu_;
  std::condition_variable cv_;        // stop_ (the applier's and balancer's waits)
  std::condition_variable queue_cv_;  // stop_, queues_ (the publishers' waits)
  bool stop_ TW_GUARDED_BY(mu_) = false;
  bool running_ TW_GUARDED_BY(mu_) = false;
  Status store_gap_ TW_GUARDED_BY(mu_);  // Health(): the first gap the applier found
  // One queue per publisher thread; a writer's requests all go to one, so they reach the stream
  // in the order they came (a rewind stays between the points around it).
  std::vector<std::deque<PublishJob>> queues_ TW_GUARDED_BY(mu_);
  size_t queued_ TW_GUARDED_BY(mu_) = 0;
  std::vector<bool> owned_ TW_GUARDED_BY(mu_);
  // The parts of View() read from NATS: the members by the balancer's last successful step, the
  // rest by RefreshView.
  std::vector<std::string> members_ TW_GUARDED_BY(mu_);
  std::vector<std::string> owners_ TW_GUARDED_BY(mu_);
  uint64_t stream_last_sequence_ TW_GUARDED_BY(mu_) = 0;
  std::string stream_leader_ TW_GUARDED_BY(mu_);
  double refreshed_unix_ TW_GUARDED_BY(mu_) = 0;

  std::atomic<uint64_t> applied_{0};
  // Where the applier started and the stream's last sequence when the node joined: once it is
  // reached the node logs how much of the stream it applied to catch up.
  uint64_t start_applied_ = 0;
  uint64_t join_last_sequence_ = 0;
  std::vector<std::thread> publishers_;
  std::thread applier_;
  std::thread balancer_thread_;
  std::thread observer_thread_;  // ObserveLoop
  std::thread snapshot_thread_;  // SnapshotLoop

  Counter& published_;
  Counter& publish_failures_;
  Counter& duplicates_;
  Counter& applied_messages_;
  Counter& stream_gaps_;
  Counter& snapshots_published_;
};

}  // namespace trainwatch::cluster
