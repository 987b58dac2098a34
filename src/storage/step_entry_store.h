// StepEntryStore: the entries of one per-step kind (histograms, images or texts; step_entry.h) and
// their per-name summaries, in the store's RocksDB database (docs/format/store.md):
//   entry_prefix project "\0" run "\0" name "\0" step(be64) [index(be32)] -> encoded entry
//   summary_prefix project "\0" run "\0" name                            -> StepEntrySummary
// One implementation for every kind: put with its summary in one batch, scan by step, delete by
// age (retention, and a run's deletion for kinds whose entries hold references), range deletion
// with the run. A kind whose entries refer to blobs passes EntryReferences, which adds the
// reference changes to the same batches.
//
// Thread-safety: the writes read what they rewrite (an old entry, reference counts): callers
// serialise the writes of one kind; scans may run concurrently with them.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "storage/media.h"
#include "storage/series_key.h"
#include "storage/step_entry.h"

namespace rocksdb {
class WriteBatch;
}  // namespace rocksdb

namespace trainwatch::storage {

class StoreDb;

// What entries that refer to shared values (images to blobs) add to the batches that change them,
// so that the references always equal the entries that make them, whatever point a crash stops at.
class EntryReferences {
 public:
  virtual ~EntryReferences() = default;
  // Adds to `batch` what storing `value` (with `payload`: the bytes it refers to) in place of
  // `old_value` (nullptr: a new entry) changes; adds the change of the blob totals to *change.
  virtual Status OnPut(const std::string* old_value, std::string_view value,
                       std::string_view payload, rocksdb::WriteBatch* batch,
                       BlobChange* change) = 0;
  // Adds to `batch` what deleting entries with these values changes.
  virtual Status OnDelete(const std::vector<std::string>& values, rocksdb::WriteBatch* batch,
                          BlobChange* change) = 0;
};

class StepEntryStore {
 public:
  // `db` and `references` (nullptr exactly when the kind holds none) must outlive this object.
  StepEntryStore(StoreDb& db, const StepEntryKind& kind, EntryReferences* references);
  StepEntryStore(const StepEntryStore&) = delete;
  StepEntryStore& operator=(const StepEntryStore&) = delete;

  const StepEntryKind& kind() const { return kind_; }

  // Atomically stores `value` at (name, step, index) (index 0 for kinds without one), replacing
  // the entry there, with the name's summary: `summary`, the stored one, updated for the entry
  // (the caller keeps it in memory). `payload` goes to the references (an image's bytes); their
  // change of the blob totals is added to *change. Writing the same entry again changes nothing
  // else. Returns the new summary.
  Result<StepEntrySummary> Put(const SeriesKey& name, const StepEntrySummary& summary, int64_t step,
                               uint32_t index, double time, std::string_view value,
                               std::string_view payload, BlobChange* change);
  // Calls fn(step, index, value) for the entries of `name` with from <= step <= to, by
  // (step, index); stops early (OK) when fn returns false.
  Status Scan(
      const SeriesKey& name, int64_t from, int64_t to,
      const std::function<bool(int64_t step, uint32_t index, std::string_view value)>& fn) const;
  // Atomically deletes the entries of `name` whose time is below `cutoff` (every one with
  // +infinity), with their references, and rewrites the summary exactly (deletes it with the last
  // entry). Returns how many were deleted; *kept is the new summary.
  Result<uint64_t> DeleteOlderThan(const SeriesKey& name, double cutoff, StepEntrySummary* kept,
                                   BlobChange* change);
  // Calls fn for every summary of the kind, in key order (start-up).
  Status ForEachSummary(const std::function<Status(SeriesKey name, StepEntrySummary)>& fn) const;
  // Adds the deletion of every entry and summary of a run to `batch`: two range deletions. Only for
  // kinds whose entries hold no references (the others are deleted name by name, DeleteOlderThan).
  void AddRunDeletion(const std::string& project, const std::string& run,
                      rocksdb::WriteBatch* batch) const;

 private:
  // The start of a name's entry keys: entry_prefix project "\0" run "\0" name "\0".
  std::string EntryPrefixOf(const SeriesKey& name) const;
  std::string EntryKeyOf(const SeriesKey& name, int64_t step, uint32_t index) const;
  size_t KeySuffixBytes() const { return 8 + (kind_.indexed ? 4 : 0); }
  // Calls fn(key, step, index, value) for the entries of a name from `start` on while the step is
  // <= to and fn returns true.
  Status ScanKeys(const std::string& prefix, const std::string& start, int64_t to,
                  const std::function<bool(std::string_view key, int64_t step, uint32_t index,
                                           std::string_view value)>& fn) const;
  Status BadEntry(const SeriesKey& name) const;

  StoreDb& db_;
  const StepEntryKind& kind_;
  EntryReferences* const references_;
};

}  // namespace trainwatch::storage
