#include "cluster/shared_records.h"

#include <utility>

namespace trainwatch::cluster {

Result<std::unique_ptr<SharedRecords>> SharedRecords::Open(JetStream& js,
                                                           SharedRecordsOptions options,
                                                           Clock& clock, Logger& logger,
                                                           MetricsRegistry& metrics,
                                                           ApplyFn apply) {
  KeyValueSpec spec;
  spec.bucket = options.bucket;
  spec.replicas = options.replicas;
  spec.ttl_ms = static_cast<int64_t>(options.ttl_seconds * 1000);
  Result<std::unique_ptr<KeyValue>> kv = js.OpenKeyValue(spec);
  if (!kv.ok()) return kv.status().WithContext("the shared records (bucket " + spec.bucket + ")");
  std::unique_ptr<SharedRecords> records(new SharedRecords(
      std::move(options), std::move(kv).value(), clock, logger, metrics, std::move(apply)));
  records->thread_ = std::thread([r = records.get()] { r->Loop(); });
  return records;
}

SharedRecords::SharedRecords(SharedRecordsOptions options, std::unique_ptr<KeyValue> kv,
                             Clock& clock, Logger& logger, MetricsRegistry& metrics, ApplyFn apply)
    : options_(std::move(options)),
      kv_(std::move(kv)),
      clock_(clock),
      log_(logger),
      apply_(std::move(apply)),
      written_(metrics.AddCounter("trainwatch_cluster_shared_records_written_total",
                                  "Alert operations (silences, acknowledgements) this node wrote "
                                  "to the cluster's bucket.")),
      write_failures_(metrics.AddCounter(
          "trainwatch_cluster_shared_records_write_failures_total",
          "Failed writes to the cluster's alert operations bucket (retried while the node runs).")),
      applied_(metrics.AddCounter(
          "trainwatch_cluster_shared_records_applied_total",
          "Alert operations read from the cluster's bucket and applied on this node.")) {}

SharedRecords::~SharedRecords() { Stop(); }

void SharedRecords::Put(std::string key, std::string value) {
  {
    MutexLock lock(mu_);
    if (stop_) return;
    queue_.emplace_back(std::move(key), std::move(value));
    ++queued_total_;
    if (queue_.size() > options_.max_queued) {
      log_.Warn("shared records: too many waiting, dropping the oldest",
                {{"key", queue_.front().first}});
      queue_.pop_front();
      ++written_total_;
      done_cv_.notify_all();
    }
  }
  cv_.notify_one();
}

void SharedRecords::Flush() {
  MutexLock lock(mu_);
  const uint64_t queued = queued_total_;
  done_cv_.wait(lock.native(),
                [&]() TW_REQUIRES(mu_) { return stop_ || written_total_ >= queued; });
  // The background thread writes and reads in turn: a read that ends after this point began after
  // those writes.
  const uint64_t read = reads_ + 1;
  read_requested_ = true;
  cv_.notify_all();
  done_cv_.wait(lock.native(), [&]() TW_REQUIRES(mu_) { return stop_ || reads_ >= read; });
}

void SharedRecords::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  done_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SharedRecords::Loop() {
  MutexLock lock(mu_);
  int64_t next_read = clock_.DeadlineIn(options_.sync_seconds);
  for (;;) {
    clock_.WaitUntil(lock.native(), cv_, next_read, [&]() TW_REQUIRES(mu_) {
      return stop_ || !queue_.empty() || read_requested_;
    });
    if (!queue_.empty()) {
      const std::pair<std::string, std::string> record = queue_.front();
      lock.Unlock();
      Result<uint64_t> written = kv_->Put(record.first, record.second);
      lock.Lock();
      if (!written.ok()) {
        write_failures_.Add();
        log_.Warn("shared records: cannot write a record",
                  {{"key", record.first}, {"error", written.status().ToString()}});
        if (stop_) {
          // Stopping with NATS unreachable: each further try would wait for its timeout.
          log_.Warn("shared records: not written at shutdown (made on this node only)",
                    {{"records", static_cast<uint64_t>(queue_.size())}});
          written_total_ += queue_.size();
          queue_.clear();
          done_cv_.notify_all();
          return;
        }
        clock_.WaitFor(lock.native(), cv_, options_.retry_seconds,
                       [&]() TW_REQUIRES(mu_) { return stop_; });
        continue;  // the record is still at the head of the queue
      }
      written_.Add();
      if (!queue_.empty() && queue_.front() == record) {
        queue_.pop_front();
        ++written_total_;  // (a record dropped while in flight was counted when dropped)
      }
      read_requested_ = true;  // apply it here too, at once
      done_cv_.notify_all();
      continue;
    }
    if (stop_) return;
    if (!read_requested_ && clock_.MonotonicNanos() < next_read) continue;
    read_requested_ = false;
    lock.Unlock();
    Read();
    lock.Lock();
    ++reads_;
    done_cv_.notify_all();
    next_read = clock_.DeadlineIn(options_.sync_seconds);
  }
}

void SharedRecords::Read() {
  Result<uint64_t> sequence = kv_->LastSequence();
  if (!sequence.ok()) return;  // NATS unreachable: the next read tries again
  if (*sequence == read_sequence_ && failures_.empty()) return;
  auto entries = kv_->Entries();
  if (!entries.ok()) return;
  for (const auto& [key, entry] : *entries) {
    auto applied = applied_revision_.find(key);
    if (applied != applied_revision_.end() && applied->second == entry.revision) continue;
    Status status = apply_(key, entry.value);
    if (status.ok() || status.code() == StatusCode::kInvalidArgument) {
      if (status.ok()) {
        applied_.Add();
      } else {
        log_.Warn("shared records: a record this node cannot read; skipped",
                  {{"key", key}, {"error", status.ToString()}});
      }
      applied_revision_[key] = entry.revision;
      failures_.erase(key);
      continue;
    }
    if (++failures_[key] >= options_.give_up_after) {
      log_.Warn("shared records: giving up on a record",
                {{"key", key}, {"error", status.ToString()}});
      applied_revision_[key] = entry.revision;
      failures_.erase(key);
    }
  }
  read_sequence_ = *sequence;
}

}  // namespace trainwatch::cluster
