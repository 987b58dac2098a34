#include "storage/step_entry_store.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <limits>
#include <memory>

#include "storage/binary_io.h"
#include "storage/store_internal.h"

namespace trainwatch::storage {

using namespace store_internal;

StepEntryStore::StepEntryStore(StoreDb& db, const StepEntryKind& kind, EntryReferences* references)
    : db_(db), kind_(kind), references_(references) {}

std::string StepEntryStore::EntryPrefixOf(const SeriesKey& name) const {
  std::string k = NameKeyOf(kind_.entry_prefix, name);
  k.push_back('\0');
  return k;
}

std::string StepEntryStore::EntryKeyOf(const SeriesKey& name, int64_t step, uint32_t index) const {
  std::string k = EntryPrefixOf(name);
  PutBigEndian64(&k, static_cast<uint64_t>(step));  // steps are >= 0: sorts numerically
  if (kind_.indexed) PutBigEndian32(&k, index);
  return k;
}

Status StepEntryStore::BadEntry(const SeriesKey& name) const {
  return Status::Corruption("bad " + std::string(kind_.noun) + " entry of " + name.run + "/" +
                            name.metric);
}

Result<StepEntrySummary> StepEntryStore::Put(const SeriesKey& name, const StepEntrySummary& summary,
                                             int64_t step, uint32_t index, double time,
                                             std::string_view value, std::string_view payload,
                                             BlobChange* change) {
  const std::string key = EntryKeyOf(name, step, index);
  // Outside the summary's step range nothing is stored: no read needed (the common case, a new
  // step). Inside it, a replaced entry, or a replayed record, must not be counted twice.
  std::string old;
  bool replacing = false;
  if (!summary.Outside(step)) {
    TW_RETURN_IF_ERROR(GetValue(db_, key, &old, &replacing, "reading an entry"));
  }
  rocksdb::WriteBatch batch;
  if (references_ != nullptr) {
    TW_RETURN_IF_ERROR(
        references_->OnPut(replacing ? &old : nullptr, value, payload, &batch, change));
  }
  StepEntrySummary updated = summary;
  if (replacing) {
    updated.min_time = std::min(updated.min_time, time);
  } else {
    updated.Include(step, time);
  }
  batch.Put(key, rocksdb::Slice(value.data(), value.size()));
  batch.Put(NameKeyOf(kind_.summary_prefix, name), EncodeStepEntrySummary(updated));
  TW_RETURN_IF_ERROR(db_.Write(&batch, "writing a " + std::string(kind_.noun)));
  return updated;
}

Status StepEntryStore::ScanKeys(
    const std::string& prefix, const std::string& start, int64_t to,
    const std::function<bool(std::string_view, int64_t, uint32_t, std::string_view)>& fn) const {
  Status bad_key;
  TW_RETURN_IF_ERROR(db_.Scan(
      start,
      [&](std::string_view k, std::string_view value) {
        if (!k.starts_with(prefix)) return false;
        if (k.size() != prefix.size() + KeySuffixBytes()) {
          bad_key = Status::Corruption("bad entry key under '" + prefix.substr(0, 1) + "'");
          return false;
        }
        const auto step = static_cast<int64_t>(DecodeBigEndian64(k.data() + prefix.size()));
        if (step > to) return false;
        const uint32_t index = kind_.indexed ? DecodeBigEndian32(k.data() + prefix.size() + 8) : 0;
        return fn(k, step, index, value);
      },
      "reading entries"));
  return bad_key;
}

Status StepEntryStore::Scan(
    const SeriesKey& name, int64_t from, int64_t to,
    const std::function<bool(int64_t, uint32_t, std::string_view)>& fn) const {
  if (to < from || to < 0) return Status::Ok();
  return ScanKeys(EntryPrefixOf(name), EntryKeyOf(name, std::max<int64_t>(from, 0), 0), to,
                  [&](std::string_view, int64_t step, uint32_t index, std::string_view value) {
                    return fn(step, index, value);
                  });
}

Result<uint64_t> StepEntryStore::DeleteOlderThan(const SeriesKey& name, double cutoff,
                                                 StepEntrySummary* kept, BlobChange* change) {
  const std::string prefix = EntryPrefixOf(name);
  rocksdb::WriteBatch batch;
  std::vector<std::string> deleted_values;  // for the references
  uint64_t deleted = 0;
  *kept = StepEntrySummary{};
  Status decoded;
  TW_RETURN_IF_ERROR(
      ScanKeys(prefix, prefix, std::numeric_limits<int64_t>::max(),
               [&](std::string_view key, int64_t step, uint32_t, std::string_view value) {
                 Result<double> time = kind_.time_of(value);
                 if (!time.ok()) {
                   decoded = BadEntry(name);
                   return false;
                 }
                 if (*time < cutoff) {
                   batch.Delete(rocksdb::Slice(key.data(), key.size()));
                   if (references_ != nullptr) deleted_values.emplace_back(value);
                   ++deleted;
                 } else {
                   kept->Include(step, *time);
                 }
                 return true;
               }));
  TW_RETURN_IF_ERROR(decoded);
  if (references_ != nullptr && !deleted_values.empty()) {
    TW_RETURN_IF_ERROR(references_->OnDelete(deleted_values, &batch, change));
  }
  const std::string summary_key = NameKeyOf(kind_.summary_prefix, name);
  if (kept->count == 0) {
    batch.Delete(summary_key);
  } else {
    batch.Put(summary_key, EncodeStepEntrySummary(*kept));
  }
  TW_RETURN_IF_ERROR(db_.Write(&batch, "deleting " + std::string(kind_.noun) + "s"));
  return deleted;
}

Status StepEntryStore::ForEachSummary(
    const std::function<Status(SeriesKey, StepEntrySummary)>& fn) const {
  const std::string kind(1, kind_.summary_prefix);
  return ForEachPrefixed(db_, kind, [&](std::string_view key, std::string_view value) {
    key.remove_prefix(1);
    size_t nul1 = key.find('\0');
    size_t nul2 = nul1 == std::string_view::npos ? nul1 : key.find('\0', nul1 + 1);
    if (nul2 == std::string_view::npos) return Status::Corruption("bad '" + kind + "' summary key");
    SeriesKey name{std::string(key.substr(0, nul1)),
                   std::string(key.substr(nul1 + 1, nul2 - nul1 - 1)),
                   std::string(key.substr(nul2 + 1))};
    StepEntrySummary summary;
    if (!DecodeStepEntrySummary(value, &summary)) {
      return Status::Corruption("bad '" + kind + "' summary of " + name.project + "/" + name.run +
                                "/" + name.metric);
    }
    return fn(std::move(name), summary);
  });
}

void StepEntryStore::AddRunDeletion(const std::string& project, const std::string& run,
                                    rocksdb::WriteBatch* batch) const {
  for (char prefix : {kind_.entry_prefix, kind_.summary_prefix}) {
    auto [from, to] = RunRangeOf(prefix, project, run);
    batch->DeleteRange(from, to);
  }
}

}  // namespace trainwatch::storage
