// API keys: any number of named keys, each with a scope (read < write < admin), an optional list
// of projects and an optional expiry (docs/security.md). Keys are stored only as SHA-256 hashes in
// <data>/keys.json, compared in constant time, and created or revoked without a restart (through
// the admin API, or `trainwatch keys` on a stopped data directory).
//
// A key reads "tw_<id>_<secret>": the id (public, 8 hex digits) finds the record, the secret (32
// random bytes, hex) is what the hash covers. The server's single --api-key is an admin key named
// "api-key", kept as a hash in memory only. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "common/mutex.h"

#include "common/cidr.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "common/status.h"

namespace trainwatch::auth {

enum class Scope { kRead = 0, kWrite = 1, kAdmin = 2 };

std::string_view ScopeName(Scope scope);
bool ParseScope(std::string_view text, Scope* out);

// Who a request is from, once its key is checked.
struct Principal {
  std::string key_name;  // "" when the server has no keys at all (loopback, open)
  Scope scope = Scope::kAdmin;
  std::vector<std::string> projects;  // empty: every project
  CidrList allow_from;                // empty: any client address
  // The key's public id ("api-key" for the server's --api-key, "" without keys): what a
  // short-lived token is bound to (auth/token_issuer.h).
  std::string key_id;

  bool Allows(Scope needed) const { return scope >= needed; }
  bool SeesProject(std::string_view project) const;
};

struct KeyRecord {
  std::string name;
  std::string id;           // the public part of the key
  std::string secret_hash;  // lower-case hex SHA-256 of the secret part
  Scope scope = Scope::kRead;
  std::vector<std::string> projects;
  double created_at = 0;
  double expires_at = 0;  // 0: never
  CidrList allow_from;    // networks the key may be used from; empty: any
};

// A key just made: its record and the key itself, shown this once.
struct NewKey {
  KeyRecord record;
  std::string key;
};

// A key as a short-lived token sees it (auth/token_issuer.h).
struct KeyBinding {
  Principal principal;
  std::string secret_hash;
  double expires_at = 0;  // 0: never
};

// Where a data directory keeps its keys.
inline std::string KeyFilePath(const std::string& data_dir) { return data_dir + "/keys.json"; }

class KeyStore {
 public:
  // Loads `path` (absent: no stored keys). The clock decides expiry.
  static Result<std::unique_ptr<KeyStore>> Open(FileSystem& fs, std::string path, Clock& clock);

  // The server's --api-key: an admin key named "api-key" (not stored).
  void SetBootstrapKey(std::string_view key);
  // True when any key exists: then every request must present one.
  bool enabled() const;

  // The principal of a presented key: Unauthenticated for a missing, unknown, wrong, revoked or
  // expired key (the message says which, never echoing the key).
  Result<Principal> Authenticate(std::string_view presented) const;

  // Creates a key and returns it: the only time it is ever shown. Names are unique
  // ([A-Za-z0-9_.-], 1..64). Durable before it returns.
  Result<NewKey> Create(const std::string& name, Scope scope, std::vector<std::string> projects,
                        double expires_at, CidrList allow_from = {});
  // NotFound when there is no such key. Durable before it returns; refused at once after.
  Status Revoke(const std::string& name);
  std::vector<KeyRecord> List() const;

  // The key whose id is `key_id` (Principal::key_id; "api-key" for the bootstrap key), expired or
  // not; none once it is revoked. What a short-lived token is checked against on every use.
  std::optional<KeyBinding> FindById(std::string_view key_id) const;

 private:
  KeyStore(FileSystem& fs, std::string path, Clock& clock)
      : fs_(fs), path_(std::move(path)), clock_(clock) {}
  Status Load();
  Status Save() const TW_REQUIRES(mu_);

  FileSystem& fs_;
  const std::string path_;
  Clock& clock_;
  mutable Mutex mu_;
  std::map<std::string, KeyRecord> by_id_ TW_GUARDED_BY(mu_);
  std::optional<std::string> bootstrap_hash_ TW_GUARDED_BY(mu_);
};

}  // namespace trainwatch::auth
