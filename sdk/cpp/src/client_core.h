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
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "batch_builder.h"
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
  static Result<std::shared_ptr<ClientCore>> OpenSpool(ClientOptions options, const std::string& writer_dir);
  ~ClientCore();
  ClientCore(const ClientCore&) = delete;
  ClientCore& operator=(const ClientCore&) = delete;

  const ClientOptions& options() const { return options_; }
  const SecretMasker& masker() const { return masker_; }
  bool closed() const { return closed_.load(std::memory_order_relaxed); }

  // The hot path: queues a record, applying the overflow policy when the buffer is full.
  void Enqueue(const Record& record);
  // Queues a run batch (metadata, histograms, graph, finish) for the next batch.
  void AddRunBatch(v1::RunBatch batch, bool after_rows);
  void RegisterRun(std::shared_ptr<RunState> run);

  // Waits until everything logged so far is acknowledged (offline: spooled). With
  // `give_up_when_unreachable`, also stops once a connection attempt made after the call failed.
  bool Flush(double timeout_seconds, bool give_up_when_unreachable = false);
  void Close();
  ClientStats Stats() const;
  const std::string& writer_id() const { return writer_id_; }
  std::string spool_path() const { return spool_ ? spool_->dir() : std::string(); }

  void Warn(WarningKind kind, const std::string& message);

 private:
  ClientCore(ClientOptions options, std::string writer_id);
  Status OpenSpoolDir(const std::string& dir);
  void Start();

  // --- batcher (batcher.cc) ---
  void BatcherLoop();
  // Moves the builder's contents into the outbox as one batch.
  void Cut();
  void QueueHeartbeat();
  // Drops the connection if the oldest unacknowledged batch has waited longer than ack_timeout.
  void CheckStuck();

  // --- sender (sender.cc) ---
  void SenderLoop();
  void ReaderLoop(Connection* connection);
  void Disconnect(std::unique_ptr<Connection>& connection, std::thread& reader);
  double NextBackoff();

  const ClientOptions options_;
  const SecretMasker masker_;
  const std::string writer_id_;
  std::unique_ptr<Spool> spool_;
  std::unique_ptr<Outbox> outbox_;
  MpmcQueue<Record> queue_;
  std::atomic<bool> closed_{false};
  std::mutex close_mu_;  // serialises Close()

  // Control events and batcher wake-ups.
  mutable std::mutex control_mu_;
  std::condition_variable control_cv_;
  std::vector<std::pair<v1::RunBatch, bool>> control_;  // GUARDED_BY(control_mu_)
  std::vector<std::shared_ptr<RunState>> runs_;         // GUARDED_BY(control_mu_)
  uint64_t flush_requested_ = 0;                        // GUARDED_BY(control_mu_)
  uint64_t flush_done_ = 0;                             // GUARDED_BY(control_mu_)
  bool batcher_stop_ = false;                           // GUARDED_BY(control_mu_)
  std::thread batcher_;
  BatchBuilder builder_;      // batcher thread only
  uint64_t next_sequence_ = 1;  // batcher thread only
  double pending_since_ = 0;    // batcher thread only: when the builder got its first record

  // Sender state.
  struct InFlight {
    bool heartbeat;
    uint64_t sequence;
    uint32_t points;
    double sent_at;
  };
  mutable std::mutex sender_mu_;
  std::condition_variable sender_cv_;   // wakes the sender (new batch, ack, broken, stop)
  std::condition_variable acked_cv_;    // wakes Flush waiters
  std::deque<InFlight> in_flight_;      // GUARDED_BY(sender_mu_)
  std::string heartbeat_;               // GUARDED_BY(sender_mu_): a serialised heartbeat to send
  Connection* connection_ = nullptr;    // GUARDED_BY(sender_mu_): for CheckStuck's Cancel
  bool broken_ = false;                 // GUARDED_BY(sender_mu_)
  bool sender_stop_ = false;            // GUARDED_BY(sender_mu_)
  std::string transport_;               // GUARDED_BY(sender_mu_)
  std::string last_error_;              // GUARDED_BY(sender_mu_)
  bool warned_unreachable_ = false;     // GUARDED_BY(sender_mu_)
  bool retry_now_ = false;              // GUARDED_BY(sender_mu_): skip the backoff wait once
  uint64_t connect_failures_ = 0;       // GUARDED_BY(sender_mu_)
  int failures_ = 0;                    // sender thread only
  std::mt19937_64 rng_;                 // sender thread only
  std::thread sender_;
  std::atomic<bool> connected_{false};

  mutable std::mutex warn_mu_;
  double last_drop_warning_ = -1e18;  // GUARDED_BY(warn_mu_)
  int rejection_warnings_ = 0;        // GUARDED_BY(warn_mu_)

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
