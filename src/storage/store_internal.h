// Pieces shared by the classes that hold the store's key families (chunk_store.cc, run_catalog.cc,
// blob_store.cc, step_entry_store.cc, ...): key building and RocksDB status mapping. Not part of
// the store's interface; included only by those files.
#pragma once

#include <rocksdb/db.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"
#include "storage/series_key.h"
#include "storage/store_db.h"

namespace trainwatch::storage::store_internal {

Status FromRocks(const rocksdb::Status& s, std::string_view what);

// prefix project "\0" run: the "r" and "g" keys, and the start of a run's per-step keys.
std::string RunKeyOf(char prefix, const std::string& project, const std::string& run);
// prefix project "\0" run "\0" name: a summary key ("H", "I", "T"), and with one more "\0" the
// start of the keys of that name's entries ("h", "i", "t").
std::string NameKeyOf(char prefix, const SeriesKey& key);
// The range [from, to) of every key of one run under `prefix`: names hold no control characters,
// so "\1" in the place of the "\0" after the run ends it.
std::pair<std::string, std::string> RunRangeOf(char prefix, const std::string& project,
                                               const std::string& run);

// Iterates every key starting with `prefix`, in key order.
Status ForEachPrefixed(const StoreDb& db, std::string_view prefix,
                       const std::function<Status(std::string_view, std::string_view)>& fn);

// Reads a value; *found tells whether the key exists (a missing key is no error).
Status GetValue(const StoreDb& db, const std::string& key, std::string* value, bool* found,
                std::string_view what);

}  // namespace trainwatch::storage::store_internal
