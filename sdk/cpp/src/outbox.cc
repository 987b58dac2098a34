#include "outbox.h"

#include <vector>

namespace trainwatch::sdk {

Outbox::Outbox(Spool* spool, uint64_t memory_max_bytes)
    : spool_(spool), memory_max_bytes_(memory_max_bytes) {}

Status Outbox::Push(OutboxBatch batch, bool to_spool, bool* spooled, uint64_t* dropped_points) {
  MutexLock lock(mu_);
  const bool over_budget = memory_bytes_ + batch.bytes->size() > memory_max_bytes_;
  if (!spool_) {
    *spooled = false;
    if (over_budget)
      return Status::ResourceExhausted(
          "memory for undelivered batches is full and there is no spool");
    memory_bytes_ += batch.bytes->size();
    held_.push_back(Held{std::move(batch), std::nullopt});
    return Status::Ok();
  }
  *spooled = to_spool || spool_->HasUnloaded() || over_budget;
  if (*spooled) {
    return spool_->Append(SpooledBatch{batch.sequence, batch.points, *batch.bytes}, dropped_points);
  }
  memory_bytes_ += batch.bytes->size();
  held_.push_back(Held{std::move(batch), std::nullopt});
  return Status::Ok();
}

std::optional<OutboxBatch> Outbox::NextUnsent(Status* error) {
  MutexLock lock(mu_);
  if (unsent_ == held_.size() && spool_ && spool_->HasUnloaded()) {
    auto loaded = spool_->LoadOldest();
    if (!loaded.ok()) {
      *error = loaded.status();
      return std::nullopt;
    }
    auto& [segment, batches] = *loaded;
    if (batches.empty()) {
      (void)spool_->Release(segment);
    } else {
      segment_remaining_[segment] = batches.size();
      for (SpooledBatch& b : batches) {
        memory_bytes_ += b.bytes.size();
        held_.push_back(Held{OutboxBatch{b.sequence, b.points,
                                         std::make_shared<const std::string>(std::move(b.bytes))},
                             segment});
      }
    }
  }
  if (unsent_ == held_.size()) return std::nullopt;
  return held_[unsent_++].batch;
}

bool Outbox::Ack(uint64_t sequence) {
  MutexLock lock(mu_);
  if (held_.empty() || unsent_ == 0 || held_.front().batch.sequence != sequence) return false;
  Held& front = held_.front();
  memory_bytes_ -= front.batch.bytes->size();
  if (front.segment) {
    auto it = segment_remaining_.find(*front.segment);
    if (it != segment_remaining_.end() && --it->second == 0) {
      (void)spool_->Release(it->first);  // a failed delete only means a harmless resend later
      segment_remaining_.erase(it);
    }
  }
  held_.pop_front();
  --unsent_;
  return true;
}

void Outbox::Rewind() {
  MutexLock lock(mu_);
  unsent_ = 0;
}

bool Outbox::Empty() const {
  MutexLock lock(mu_);
  return held_.empty() && (!spool_ || !spool_->HasUnloaded());
}

uint64_t Outbox::memory_bytes() const {
  MutexLock lock(mu_);
  return memory_bytes_;
}

size_t Outbox::in_memory() const {
  MutexLock lock(mu_);
  return held_.size();
}

Status Outbox::SpillMemory() {
  MutexLock lock(mu_);
  if (!spool_) return Status::Unavailable("no spool directory");
  // Batches loaded from the spool are still in their segment files; the others are written as
  // segments of their own, one per consecutive stretch, so segments never overlap.
  std::vector<SpooledBatch> stretch;
  auto flush = [&]() -> Status {
    Status s = spool_->AppendSegment(stretch);
    stretch.clear();
    return s;
  };
  for (const Held& h : held_) {
    if (h.segment) {
      TW_RETURN_IF_ERROR(flush());
      continue;
    }
    stretch.push_back(SpooledBatch{h.batch.sequence, h.batch.points, *h.batch.bytes});
  }
  TW_RETURN_IF_ERROR(flush());
  held_.clear();
  segment_remaining_.clear();
  unsent_ = 0;
  memory_bytes_ = 0;
  spool_->UnloadAll();
  return Status::Ok();
}

}  // namespace trainwatch::sdk
