// ConnectionRegistry: the server's open connections as its caps see them — per client address and
// overall. A new connection over a cap closes the oldest connection (of its address, or of the
// address with the most connections) that is only waiting for a request header: what a slow-header
// flood is made of, and an idle keep-alive a client reopens at no cost. With none to close, the
// newcomer gets no slot. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/metrics_registry.h"
#include "common/mutex.h"

namespace trainwatch::api {

// What the caps can close: an HTTP connection waiting for its next request header.
class Connection {
 public:
  virtual ~Connection() = default;
  // Closes the connection; from any thread, with no registry lock held.
  virtual void Evict() = 0;
};

class ConnectionRegistry {
 public:
  // One open connection: where it is from, and whether it is only waiting for a request header.
  // Owned by the connection (HTTP, then WebSocket after an upgrade); its destruction releases the
  // connection's place. The registry must outlive it.
  class Slot {
   public:
    Slot(ConnectionRegistry& registry, std::string address)
        : address(std::move(address)), registry_(registry) {}
    ~Slot() { registry_.Release(this); }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

    const std::string address;

   private:
    friend class ConnectionRegistry;
    ConnectionRegistry& registry_;
    // All guarded by registry_.mu_ (not TW_GUARDED_BY: the analysis cannot tell that the slot a
    // registry function is handed belongs to that registry, as every slot does):
    std::list<Slot*>::iterator position_;  // in registry_.by_address_[address] while listed
    bool listed_ = false;
    bool evicted_ = false;
    bool waiting_ = false;
    uint64_t waiting_since_ = 0;
    std::weak_ptr<Connection> connection_;  // what to close when evicted
  };

  // Caps of at least 1. `evicted` counts the connections closed to make room; it must outlive the
  // registry.
  ConnectionRegistry(size_t max_connections, size_t max_per_address, Counter& evicted);
  ConnectionRegistry(const ConnectionRegistry&) = delete;
  ConnectionRegistry& operator=(const ConnectionRegistry&) = delete;

  // A slot for a new connection from `address`, evicting the oldest waiting connection when a cap
  // is reached; null when the caps are reached and none waits (refuse the newcomer). The slot is
  // not waiting until SetWaiting says so.
  std::shared_ptr<Slot> Register(const std::string& address);
  // Names what closing `slot` evicts; only a connection with one can be evicted.
  void Attach(Slot& slot, std::weak_ptr<Connection> connection);
  // Marks a slot as waiting for a request header (true) or reading one that came (false); false
  // when its connection was evicted and must end.
  bool SetWaiting(Slot& slot, bool waiting);
  // Evicts the oldest waiting connection of the address with the most connections (out of file
  // descriptors); false when none waits.
  bool EvictOldestWaiting();
  // Open connections (slots not released nor evicted).
  size_t open() const;

 private:
  void Release(Slot* slot) TW_EXCLUDES(mu_);
  std::shared_ptr<Connection> TakeOldestWaiting(std::list<Slot*>& slots) TW_REQUIRES(mu_);
  std::shared_ptr<Connection> TakeOldestWaitingAnywhere() TW_REQUIRES(mu_);

  const size_t max_connections_;
  const size_t max_per_address_;
  Counter& evicted_;
  mutable Mutex mu_;
  std::unordered_map<std::string, std::list<Slot*>> by_address_ TW_GUARDED_BY(mu_);
  size_t open_ TW_GUARDED_BY(mu_) = 0;
  uint64_t waiting_clock_ TW_GUARDED_BY(mu_) = 0;  // orders the waits, oldest first
};

}  // namespace trainwatch::api
