#include "storage/store_internal.h"

#include <memory>

namespace trainwatch::storage::store_internal {

Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  if (s.IsCorruption()) return Status::Corruption(std::string(what) + ": " + s.ToString());
  if (s.IsNoSpace()) return Status::ResourceExhausted(std::string(what) + ": " + s.ToString());
  return Status::IoError(std::string(what) + ": " + s.ToString());
}

std::string RunKeyOf(char prefix, const std::string& project, const std::string& run) {
  std::string k(1, prefix);
  k += project;
  k.push_back('\0');
  k += run;
  return k;
}

std::string NameKeyOf(char prefix, const SeriesKey& key) {
  std::string k = RunKeyOf(prefix, key.project, key.run);
  k.push_back('\0');
  k += key.metric;
  return k;
}

std::pair<std::string, std::string> RunRangeOf(char prefix, const std::string& project,
                                               const std::string& run) {
  std::string from = RunKeyOf(prefix, project, run), to = from;
  from.push_back('\0');
  to.push_back('\1');
  return {std::move(from), std::move(to)};
}

Status ForEachPrefixed(const StoreDb& db, std::string_view prefix,
                       const std::function<Status(std::string_view, std::string_view)>& fn) {
  Status failed;
  TW_RETURN_IF_ERROR(db.Scan(
      prefix,
      [&](std::string_view key, std::string_view value) {
        if (!key.starts_with(prefix)) return false;
        failed = fn(key, value);
        return failed.ok();
      },
      "iterating store"));
  return failed;
}

Status GetValue(const StoreDb& db, const std::string& key, std::string* value, bool* found,
                std::string_view what) {
  return db.Get(key, value, found, what);
}

}  // namespace trainwatch::storage::store_internal
