// ClientCore: the machinery behind Client and Run.
//
//   Run::Log ──► MpmcQueue<Record> ──► batcher thread ──► Outbox (memory | Spool) ──► sender thread
//                (lock-free)            BatchBuilder,        in sequence order         Connection
//   Run::Finish, SetConfig, ... ──► control list (mutex) ──┘  heartbeats ──────────────►  ▲ acks:
//                                                                               reader thread
//
// The batcher cuts a batch when it holds batch_max_points or its oldest point waited
// batch_max_delay_seconds, numbers it (writer id, sequence) and queues it in the outbox. The sender
// keeps one connection, sends up to kWindow unacknowledged batches, and on any failure (broken
// connection, refused batch, no ack within ack_timeout_seconds) drops the connection, waits with
// exponential backoff and jitter, reconnects and resends everything unacknowledged from the oldest.
// While it is disconnected new batches go straight to the spool, so a crash of the training
// process during an outage loses at most the batches in flight at the moment it began.
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "batch_builder.h"
#include "common/mutex.h"
#include "common/secrets.h"
#include "connection.h"
#include "mpmc_queue.h"
#include "outbox.h"
#include "record.h"
#include "run_state.h"
#include "spool.h"
#include "trainwatch/client.h"

namespace trainwatch::sdk {

class ClientCore {
 public:
  static constexpr size_t kWindow = 32;  // unacknowledged batches per connection

  // A client writing as a new writer (random id), spooling under options.spool_dir.
  static std::shared_ptr<ClientCore> Create(ClientOptions options);
  // A client that only uploads an existing writer's spool directory (`trainwatch sync`): it sends
  // what the directory holds, with the writer id and sequences stored there.
  static Result<std::shared_ptr<ClientCore>> OpenSpool(ClientOptions options,
                                                       const std::string& writer_dir);
  ~ClientCore();
  ClientCore(const ClientCore&) = delete;
  ClientCore& operator=(const ClientCore&) = delete;

  const ClientOptions& options() const { return options_; }
  const SecretMasker& masker() const { return masker_; }
  bool closed() const { return closed_.load(std::memory_order_relaxed); }

  // The hot path: queues a record, applying the overflow policy when the buffer is full.
  void Enqueue(const Record& record) TW_EXCLUDES(warn_mu_);
  // Queues a run batch (metadata, histograms, graph, finish) for the next batch.
  void AddRunBatch(v1::RunBatch batch, bool after_rows) TW_EXCLUDES(control_mu_);
  void RegisterRun(std::shared_ptr<RunState> run) TW_EXCLUDES(control_mu_);

  // Waits until everything logged so far is acknowledged (offline: spooled). With
  // `give_up_when_unreachable`, also stops once a connection attempt made after the call failed.
  bool Flush(double timeout_seconds, bool give_up_when_unreachable = false)
      TW_EXCLUDES(control_mu_, sender_mu_);
  void Close() TW_EXCLUDES(close_mu_, control_mu_, sender_mu_);
  ClientStats Stats() const TW_EXCLUDES(sender_mu_);
  const std::string& writer_id() const { return writer_id_; }
  std::string spool_path() const { return spool_ ? spool_->dir() : std::string(); }

  // Calls options.on_warning (or writes to stderr). The callback may call back into the client
  // (Log takes warn_mu_ when the buffer is full, Stats takes sender_mu_): call it without them.
  void Warn(WarningKind kind, const std::string& message)
      TW_EXCLUDES(control_mu_, sender_mu_, warn_mu_);

 private:
  ClientCore(ClientOptions options, std::string writer_id);
  Status OpenSpoolDir(const std::string& dir);
  void Start() TW_EXCLUDES(close_mu_);

  // --- batcher (batcher.cc) ---
  void BatcherLoop() TW_EXCLUDES(control_mu_);
  // Moves the builder's contents into the outbox as one batch.
  void Cut() TW_EXCLUDES(sender_mu_);
  void QueueHeartbeat() TW_EXCLUDES(control_mu_, sender_mu_);
  // Drops the connection if the oldest unacknowledged batch has waited longer than ack_timeout.
  void CheckStuck() TW_EXCLUDES(sender_mu_);

  // --- sender (sender.cc) ---
  void SenderLoop() TW_EXCLUDES(sender_mu_);
  void ReaderLoop(Connection* connection) TW_EXCLUDES(sender_mu_, warn_mu_);
  void Disconnect(std::unique_ptr<Connection>& connection, std::thread& reader)
      TW_EXCLUDES(sender_mu_);
  double NextBackoff();

  const ClientOptions options_;
  const SecretMasker masker_;
  const std::string writer_id_;
  std::unique_ptr<Spool> spool_;
  std::unique_ptr<Outbox> outbox_;
  MpmcQueue<Record> queue_;
  std::atomic<bool> closed_{false};
  Mutex close_mu_;  // serialises Start() and Close(): the threads they start and join

  // Control events and batcher wake-ups.
  mutable Mutex control_mu_;
  std::condition_variable control_cv_;
  std::vector<std::pair<v1::RunBatch, bool>> control_ TW_GUARDED_BY(control_mu_);
  std::vector<std::shared_ptr<RunState>> runs_ TW_GUARDED_BY(control_mu_);
  uint64_t flush_requested_ TW_GUARDED_BY(control_mu_) = 0;
  uint64_t flush_done_ TW_GUARDED_BY(control_mu_) = 0;
  bool batcher_stop_ TW_GUARDED_BY(control_mu_) = false;
  std::thread batcher_ TW_GUARDED_BY(close_mu_);
  BatchBuilder builder_;        // batcher thread only
  uint64_t next_sequence_ = 1;  // batcher thread only
  double pending_since_ = 0;    // batcher thread only: when the builder got its first record

  // Sender state.
  struct InFlight {
    bool heartbeat;
    uint64_t sequence;
    uint32_t points;
    double sent_at;
  };
  mutable Mutex sender_mu_;
  std::condition_variable sender_cv_;  // wakes the sender (new batch, ack, broken, stop)
  std::condition_variable acked_cv_;   // wakes Flush waiters
  std::deque<InFlight> in_flight_ TW_GUARDED_BY(sender_mu_);
  std::string heartbeat_ TW_GUARDED_BY(sender_mu_);             // a serialised heartbeat to send
  Connection* connection_ TW_GUARDED_BY(sender_mu_) = nullptr;  // for CheckStuck's Cancel
  bool broken_ TW_GUARDED_BY(sender_mu_) = false;
  bool sender_stop_ TW_GUARDED_BY(sender_mu_) = false;
  std::string transport_ TW_GUARDED_BY(sender_mu_);
  std::string last_error_ TW_GUARDED_BY(sender_mu_);
  bool warned_unreachable_ TW_GUARDED_BY(sender_mu_) = false;
  bool retry_now_ TW_GUARDED_BY(sender_mu_) = false;  // skip the backoff wait once
  uint64_t connect_failures_ TW_GUARDED_BY(sender_mu_) = 0;
  int failures_ = 0;     // sender thread only
  std::mt19937_64 rng_;  // sender thread only
  std::thread sender_ TW_GUARDED_BY(close_mu_);
  std::atomic<bool> connected_{false};

  mutable Mutex warn_mu_;
  double last_drop_warning_ TW_GUARDED_BY(warn_mu_) = -1e18;
  int rejection_warnings_ TW_GUARDED_BY(warn_mu_) = 0;

  std::atomic<uint64_t> points_logged_{0};
  std::atomic<uint64_t> points_acked_{0};
  std::atomic<uint64_t> points_dropped_{0};
  std::atomic<uint64_t> points_spooled_{0};
  std::atomic<uint64_t> batches_sent_{0};
  std::atomic<uint64_t> batches_acked_{0};
  std::atomic<uint64_t> batches_duplicate_{0};
  std::atomic<uint64_t> reconnects_{0};
};

// Test-only: when set, called on the batcher thread after a batch went to the spool (and
// points_spooled counts it), so that tests wait for that instead of sleeping. Unset otherwise.
inline std::atomic<void (*)()> spooled_hook_for_testing{nullptr};

// Seconds since the epoch, from the system clock.
double UnixNow();
// Seconds from a monotonic clock.
double MonotonicNow();

}  // namespace trainwatch::sdk
