#include "cluster/key_value.h"

#include <cstring>
#include <memory>
#include <string>

#include "cluster/nats_status.h"

namespace trainwatch::cluster {
namespace {

struct EntryDeleter {
  void operator()(kvEntry* e) const { kvEntry_Destroy(e); }
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
  kvKeysList list{};
  natsStatus s = kvStore_Keys(&list, kv_, nullptr);
  std::vector<std::string> keys;
  if (s == NATS_NOT_FOUND) return keys;  // an empty bucket
  if (s != NATS_OK) return FromNats(s, "list keys");
  for (int i = 0; i < list.Count; ++i) keys.emplace_back(list.Keys[i]);
  kvKeysList_Destroy(&list);
  return keys;
}

}  // namespace trainwatch::cluster
