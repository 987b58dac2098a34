#include "cluster/notified_record.h"

#include <algorithm>
#include <utility>

namespace trainwatch::cluster {

Result<std::unique_ptr<NotifiedRecord>> NotifiedRecord::Open(JetStream& js,
                                                             NotifiedRecordOptions options,
                                                             Clock& clock, Logger& logger,
                                                             MetricsRegistry& metrics) {
  KeyValueSpec spec;
  spec.bucket = options.bucket;
  spec.replicas = options.replicas;
  spec.ttl_ms = static_cast<int64_t>(options.ttl_seconds * 1000);
  Result<std::unique_ptr<KeyValue>> kv = js.OpenKeyValue(spec);
  if (!kv.ok()) return kv.status().WithContext("the notified record (bucket " + spec.bucket + ")");
  std::unique_ptr<NotifiedRecord> record(
      new NotifiedRecord(std::move(options), std::move(kv).value(), clock, logger, metrics));
  record->thread_ = std::thread([r = record.get()] { r->Loop(); });
  return record;
}

NotifiedRecord::NotifiedRecord(NotifiedRecordOptions options, std::unique_ptr<KeyValue> kv,
                               Clock& clock, Logger& logger, MetricsRegistry& metrics)
    : options_(std::move(options)),
      kv_(std::move(kv)),
      clock_(clock),
      log_(logger),
      marked_(metrics.AddCounter(
          "trainwatch_cluster_notified_marked_total",
          "Delivered alert notifications recorded in the cluster's notified bucket.")),
      mark_failures_(metrics.AddCounter(
          "trainwatch_cluster_notified_mark_failures_total",
          "Failed writes to the cluster's notified bucket (retried while the node runs).")) {}

NotifiedRecord::~NotifiedRecord() { Stop(); }

void NotifiedRecord::Mark(std::string key) {
  if (key.empty()) return;
  {
    MutexLock lock(mu_);
    if (stop_) return;
    queue_.push_back(std::move(key));
    ++queued_total_;
    if (queue_.size() > options_.max_queued) {
      log_.Warn("notified record: too many keys waiting, dropping the oldest",
                {{"key", queue_.front()}});
      queue_.pop_front();
      ++done_total_;
      done_cv_.notify_all();
    }
  }
  cv_.notify_one();
}

Result<bool> NotifiedRecord::Contains(const std::string& key) {
  {
    MutexLock lock(mu_);
    if (in_flight_ == key || std::find(queue_.begin(), queue_.end(), key) != queue_.end())
      return true;
  }
  Result<KeyValueEntry> entry = kv_->Get(key);
  if (entry.ok()) return true;
  if (entry.status().code() == StatusCode::kNotFound) return false;
  return entry.status().WithContext("the notified record");
}

void NotifiedRecord::Flush() {
  MutexLock lock(mu_);
  const uint64_t target = queued_total_;
  done_cv_.wait(lock.native(), [&]() TW_REQUIRES(mu_) { return done_total_ >= target; });
}

void NotifiedRecord::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NotifiedRecord::Loop() {
  MutexLock lock(mu_);
  for (;;) {
    cv_.wait(lock.native(), [&]() TW_REQUIRES(mu_) { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing is left
    in_flight_ = queue_.front();
    const std::string key = in_flight_;
    lock.Unlock();
    Result<uint64_t> written = kv_->Put(key, options_.node_name);
    lock.Lock();
    if (written.ok()) {
      marked_.Add();
    } else {
      mark_failures_.Add();
      log_.Warn("notified record: cannot write a key",
                {{"key", key}, {"error", written.status().ToString()}});
      if (stop_) {
        // Stopping with NATS unreachable: each further try would wait for its timeout. The new
        // owner of these runs may send these notifications once more.
        log_.Warn("notified record: keys not written at shutdown",
                  {{"keys", static_cast<uint64_t>(queue_.size())}});
        done_total_ += queue_.size();
        queue_.clear();
        in_flight_.clear();
        done_cv_.notify_all();
        return;
      }
      in_flight_.clear();
      clock_.WaitFor(lock.native(), cv_, options_.retry_seconds,
                     [&]() TW_REQUIRES(mu_) { return stop_; });
      continue;  // the key is still at the head of the queue
    }
    if (!queue_.empty() && queue_.front() == key) {
      queue_.pop_front();
      ++done_total_;  // (a key dropped while in flight was counted when dropped)
    }
    in_flight_.clear();
    done_cv_.notify_all();
  }
}

}  // namespace trainwatch::cluster
