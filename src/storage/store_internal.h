// Pieces of the ChunkStore shared by its translation units (chunk_store.cc, chunk_store_media.cc):
// key building, RocksDB status mapping and the summary record of per-step kinds. Not part of the
// store's interface; included only by those files.
#pragma once

#include <rocksdb/db.h>

#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "storage/histogram.h"
#include "storage/series_key.h"

namespace trainwatch::storage::store_internal {

Status FromRocks(const rocksdb::Status& s, std::string_view what);

// prefix project "\0" run: the "r" and "g" keys, and the start of a run's per-step keys.
std::string RunKeyOf(char prefix, const std::string& project, const std::string& run);
// prefix project "\0" run "\0" name: a summary key ("H", "I", "T"), and with one more "\0" the
// start of the keys of that name's values ("h", "i", "t").
std::string NameKeyOf(char prefix, const SeriesKey& key);
// The range [from, to) of every key of one run under `prefix`: names hold no control characters,
// so "\1" in the place of the "\0" after the run ends it.
std::pair<std::string, std::string> RunRangeOf(char prefix, const std::string& project,
                                               const std::string& run);

// The "H", "I" and "T" summary values (docs/format/store.md).
std::string EncodeNameSummary(const HistogramSeriesInfo& info);
bool DecodeNameSummary(std::string_view data, HistogramSeriesInfo* info);
// Calls fn(key, info) for every summary record under `prefix`.
Status ForEachNameSummary(rocksdb::DB& db, char prefix,
                          const std::function<Status(SeriesKey, HistogramSeriesInfo)>& fn);

// Iterates every key starting with `prefix`, in key order.
Status ForEachPrefixed(rocksdb::DB& db, std::string_view prefix,
                       const std::function<Status(std::string_view, std::string_view)>& fn);

}  // namespace trainwatch::storage::store_internal
