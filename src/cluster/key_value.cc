#include "cluster/key_value.h"

#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "cluster/nats_status.h"

namespace trainwatch::cluster {
namespace {

struct EntryDeleter {
  void operator()(kvEntry* e) const { kvEntry_Destroy(e); }
};
struct StreamInfoDeleter {
  void operator()(jsStreamInfo* info) const { jsStreamInfo_Destroy(info); }
};

// A conditional write lost its race: the server refused the expected last sequence. libnats
// 3.4 reports it as NATS_ERR with the server's text, which names it.
bool LostRace(natsStatus s) {
  if (s != NATS_ERR) return false;
  natsStatus last = NATS_OK;
  const char* text = nats_GetLastError(&last);
  return text != nullptr && std::strstr(text, "wrong last sequence") != nullptr;
}

Result<uint64_t> Written(natsStatus s, uint64_t revision, const std::string& what) {
  if (s == NATS_OK) return revision;
  if (LostRace(s)) return Status::AlreadyExists(what + ": another write came first");
  return FromNats(s, what);
}

}  // namespace

KeyValue::~KeyValue() { kvStore_Destroy(kv_); }

Result<KeyValueEntry> KeyValue::Get(std::string_view key) {
  const std::string k(key);
  kvEntry* raw = nullptr;
  natsStatus s = kvStore_Get(&raw, kv_, k.c_str());
  std::unique_ptr<kvEntry, EntryDeleter> entry(raw);
  if (s != NATS_OK) return FromNats(s, "get " + k);
  const char* data = static_cast<const char*>(kvEntry_Value(entry.get()));
  return KeyValueEntry{std::string(data, static_cast<size_t>(kvEntry_ValueLen(entry.get()))),
                       kvEntry_Revision(entry.get())};
}

Result<uint64_t> KeyValue::Create(std::string_view key, std::string_view value) {
  const std::string k(key);
  uint64_t revision = 0;
  natsStatus s =
      kvStore_Create(&revision, kv_, k.c_str(), value.data(), static_cast<int>(value.size()));
  return Written(s, revision, "create " + k);
}

Result<uint64_t> KeyValue::Update(std::string_view key, std::string_view value, uint64_t revision) {
  const std::string k(key);
  uint64_t next = 0;
  natsStatus s =
      kvStore_Update(&next, kv_, k.c_str(), value.data(), static_cast<int>(value.size()), revision);
  return Written(s, next, "update " + k + " at revision " + std::to_string(revision));
}

Result<uint64_t> KeyValue::Put(std::string_view key, std::string_view value) {
  const std::string k(key);
  uint64_t revision = 0;
  natsStatus s =
      kvStore_Put(&revision, kv_, k.c_str(), value.data(), static_cast<int>(value.size()));
  return Written(s, revision, "put " + k);
}

Status KeyValue::Delete(std::string_view key) {
  const std::string k(key);
  return FromNats(kvStore_Delete(kv_, k.c_str()), "delete " + k);
}

Result<std::vector<std::string>> KeyValue::Keys() {
  TW_ASSIGN_OR_RETURN(auto entries, Entries());
  std::vector<std::string> keys;
  keys.reserve(entries.size());
  for (auto& [key, entry] : entries) keys.push_back(std::move(key));
  return keys;
}

Result<std::vector<std::pair<std::string, KeyValueEntry>>> KeyValue::Entries() {
  const std::string bucket = kvStore_Bucket(kv_);
  const std::string prefix = "$KV." + bucket + ".";
  const std::string filter = prefix + ">";
  jsOptions options;
  jsOptions_Init(&options);
  options.Stream.Info.SubjectsFilter = filter.c_str();
  jsStreamInfo* raw = nullptr;
  jsErrCode error = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&raw, js_, ("KV_" + bucket).c_str(), &options, &error);
  std::unique_ptr<jsStreamInfo, StreamInfoDeleter> info(raw);
  if (s != NATS_OK) return FromNats(s, "list keys of " + bucket, error);
  std::vector<std::pair<std::string, KeyValueEntry>> entries;
  const jsStreamStateSubjects* subjects = info->State.Subjects;
  for (int i = 0; subjects != nullptr && i < subjects->Count; ++i) {
    std::string_view subject = subjects->List[i].Subject;
    if (!subject.starts_with(prefix)) continue;
    std::string key(subject.substr(prefix.size()));
    // The subject's last message may be a delete marker (a node that left): no value then.
    Result<KeyValueEntry> entry = Get(key);
    if (entry.ok()) {
      entries.emplace_back(std::move(key), std::move(entry).value());
    } else if (entry.status().code() != StatusCode::kNotFound) {
      return entry.status();
    }
  }
  return entries;
}

Result<uint64_t> KeyValue::LastSequence() {
  const std::string bucket = kvStore_Bucket(kv_);
  jsStreamInfo* raw = nullptr;
  jsErrCode error = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&raw, js_, ("KV_" + bucket).c_str(), nullptr, &error);
  std::unique_ptr<jsStreamInfo, StreamInfoDeleter> info(raw);
  if (s != NATS_OK) return FromNats(s, "stream state of " + bucket, error);
  return info->State.LastSeq;
}

}  // namespace trainwatch::cluster
