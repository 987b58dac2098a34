// A JetStream key-value bucket: values with revisions, and the compare-and-set writes that
// leases and ownership are built on (docs/cluster.md). Obtained from JetStream::OpenKeyValue.
#pragma once

#include <nats/nats.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace trainwatch::cluster {

struct KeyValueSpec {
  std::string bucket;
  int replicas = 3;
  int64_t ttl_ms = 0;  // a key not written for this long is gone; 0: never
};

struct KeyValueEntry {
  std::string value;
  uint64_t revision = 0;
};

class KeyValue {
 public:
  // `js` (not owned) is the context the bucket was opened through; it outlives the KeyValue.
  KeyValue(kvStore* kv, jsCtx* js) : kv_(kv), js_(js) {}
  ~KeyValue();
  KeyValue(const KeyValue&) = delete;
  KeyValue& operator=(const KeyValue&) = delete;

  // NotFound when the key has no value (never written, deleted, or expired).
  Result<KeyValueEntry> Get(std::string_view key);
  // Writes only if the key has no value; AlreadyExists when it has one (another writer won).
  // Returns the new revision.
  Result<uint64_t> Create(std::string_view key, std::string_view value);
  // Writes only if the key's revision is still `revision`; AlreadyExists when another write came
  // in between (or the key expired). Returns the new revision.
  Result<uint64_t> Update(std::string_view key, std::string_view value, uint64_t revision);
  // Writes unconditionally. Returns the new revision.
  Result<uint64_t> Put(std::string_view key, std::string_view value);
  // Removes the key's value (a later Create succeeds).
  Status Delete(std::string_view key);
  // The keys that have a value now (deleted and expired ones excluded), in no order. Read from
  // the subjects of the bucket's stream (a stream info request, answered by its leader) and a Get
  // of each, never through a consumer: libnats's kvStore_Keys creates one, and after a server of
  // the cluster was killed its listings timed out for over a minute here.
  Result<std::vector<std::string>> Keys();
  // Every key that has a value now, with it; read as Keys is.
  Result<std::vector<std::pair<std::string, KeyValueEntry>>> Entries();
  // The sequence of the bucket stream's last message (0 when empty): it moves with every write
  // and delete, so that a reader can tell the bucket has not changed without listing it.
  Result<uint64_t> LastSequence();

 private:
  kvStore* kv_;
  jsCtx* js_;
};

}  // namespace trainwatch::cluster
