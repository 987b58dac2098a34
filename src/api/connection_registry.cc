#include "api/connection_registry.h"

#include <algorithm>

namespace trainwatch::api {

ConnectionRegistry::ConnectionRegistry(size_t max_connections, size_t max_per_address,
                                       Counter& evicted)
    : max_connections_(max_connections), max_per_address_(max_per_address), evicted_(evicted) {}

std::shared_ptr<ConnectionRegistry::Slot> ConnectionRegistry::Register(const std::string& address) {
  std::shared_ptr<Connection> victim;
  std::shared_ptr<Slot> slot;
  {
    MutexLock lock(mu_);
    std::list<Slot*>& mine = by_address_[address];
    if (mine.size() >= max_per_address_) {
      victim = TakeOldestWaiting(mine);
    } else if (open_ >= max_connections_) {
      victim = TakeOldestWaitingAnywhere();
    }
    if (mine.size() < max_per_address_ && open_ < max_connections_) {
      slot = std::make_shared<Slot>(*this, address);
      slot->position_ = mine.insert(mine.end(), slot.get());
      slot->listed_ = true;
      ++open_;
    } else if (mine.empty()) {
      by_address_.erase(address);
    }
  }
  if (victim) {
    evicted_.Add();
    victim->Evict();
  }
  return slot;
}

void ConnectionRegistry::Attach(Slot& slot, std::weak_ptr<Connection> connection) {
  MutexLock lock(mu_);
  slot.connection_ = std::move(connection);
}

bool ConnectionRegistry::SetWaiting(Slot& slot, bool waiting) {
  MutexLock lock(mu_);
  if (slot.evicted_) return false;
  slot.waiting_ = waiting;
  if (waiting) slot.waiting_since_ = ++waiting_clock_;
  return true;
}

bool ConnectionRegistry::EvictOldestWaiting() {
  std::shared_ptr<Connection> victim;
  {
    MutexLock lock(mu_);
    victim = TakeOldestWaitingAnywhere();
  }
  if (!victim) return false;
  evicted_.Add();
  victim->Evict();
  return true;
}

size_t ConnectionRegistry::open() const {
  MutexLock lock(mu_);
  return open_;
}

void ConnectionRegistry::Release(Slot* slot) {
  MutexLock lock(mu_);
  if (!slot->listed_) return;
  auto it = by_address_.find(slot->address);
  it->second.erase(slot->position_);
  if (it->second.empty()) by_address_.erase(it);
  --open_;
}

std::shared_ptr<Connection> ConnectionRegistry::TakeOldestWaiting(std::list<Slot*>& slots) {
  Slot* oldest = nullptr;
  std::shared_ptr<Connection> connection;
  for (Slot* slot : slots) {
    if (!slot->waiting_ || (oldest && slot->waiting_since_ >= oldest->waiting_since_)) continue;
    if (auto alive = slot->connection_.lock()) {
      oldest = slot;
      connection = std::move(alive);
    }
  }
  if (!oldest) return nullptr;
  slots.erase(oldest->position_);
  oldest->listed_ = false;
  oldest->evicted_ = true;
  oldest->waiting_ = false;
  --open_;
  return connection;
}

std::shared_ptr<Connection> ConnectionRegistry::TakeOldestWaitingAnywhere() {
  // The address with the most connections gives one up: a flood pays for itself.
  std::list<Slot*>* busiest = nullptr;
  for (auto& [address, slots] : by_address_) {
    bool has_waiting =
        std::any_of(slots.begin(), slots.end(), [](const Slot* s) { return s->waiting_; });
    if (has_waiting && (!busiest || slots.size() > busiest->size())) busiest = &slots;
  }
  return busiest ? TakeOldestWaiting(*busiest) : nullptr;
}

}  // namespace trainwatch::api
