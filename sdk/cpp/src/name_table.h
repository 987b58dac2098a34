// NameTable: interns a run's metric names as small integer ids, so that Run::Log enqueues numbers,
// not strings.
//
// Lookups are lock-free: readers search an immutable snapshot published through an atomic
// pointer. A name seen for the first time takes a mutex, copies the snapshot with the new name and
// publishes the copy; old snapshots are kept until the table dies (a reader may still hold one),
// which costs O(n^2) memory for n names — negligible for the hundreds of metrics a run has.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"

namespace trainwatch::sdk {

class NameTable {
 public:
  NameTable();
  NameTable(const NameTable&) = delete;
  NameTable& operator=(const NameTable&) = delete;

  // The id of `name`, interning it on first use.
  uint32_t Intern(std::string_view name);
  // The name of an id Intern returned. The reference stays valid for the table's lifetime.
  const std::string& Name(uint32_t id) const;
  size_t size() const;

 private:
  using Map = std::unordered_map<std::string_view, uint32_t>;  // views into names_

  std::atomic<const Map*> snapshot_;
  mutable Mutex mu_;
  // Appended with mu_ held; an element never moves, so a reference Name() returned stays valid.
  std::deque<std::string> names_ TW_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<const Map>> maps_ TW_GUARDED_BY(mu_);  // every snapshot published
};

}  // namespace trainwatch::sdk
