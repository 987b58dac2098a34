#include "name_table.h"

namespace trainwatch::sdk {

NameTable::NameTable() {
  maps_.push_back(std::make_unique<const Map>());
  snapshot_.store(maps_.back().get(), std::memory_order_release);
}

uint32_t NameTable::Intern(std::string_view name) {
  const Map* map = snapshot_.load(std::memory_order_acquire);
  auto it = map->find(name);
  if (it != map->end()) return it->second;
  MutexLock lock(mu_);
  map = maps_.back().get();
  it = map->find(name);
  if (it != map->end()) return it->second;
  uint32_t id = static_cast<uint32_t>(names_.size());
  const std::string& stored = names_.emplace_back(name);
  auto next = std::make_unique<Map>(*map);
  next->emplace(stored, id);
  maps_.push_back(std::move(next));
  snapshot_.store(maps_.back().get(), std::memory_order_release);
  return id;
}

const std::string& NameTable::Name(uint32_t id) const {
  MutexLock lock(mu_);
  return names_[id];
}

size_t NameTable::size() const {
  MutexLock lock(mu_);
  return names_.size();
}

}  // namespace trainwatch::sdk
