#include "auth/key_store.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json.h"
#include "common/strings.h"

namespace trainwatch::auth {
namespace {

constexpr std::string_view kPrefix = "tw_";
constexpr size_t kIdBytes = 4;
constexpr size_t kSecretBytes = 32;
constexpr std::string_view kBootstrapId = "api-key";

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr);
  return LowerHex(std::string_view(reinterpret_cast<const char*>(digest), size));
}

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
    throw std::runtime_error("RAND_bytes failed");  // no entropy: nothing sensible to do
  }
  return LowerHex(raw);
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

// "tw_<id>_<secret>" -> id and secret; false for anything else.
bool SplitKey(std::string_view key, std::string_view* id, std::string_view* secret) {
  if (!key.starts_with(kPrefix)) return false;
  key.remove_prefix(kPrefix.size());
  size_t sep = key.find('_');
  if (sep != kIdBytes * 2 || key.size() != sep + 1 + kSecretBytes * 2) return false;
  *id = key.substr(0, sep);
  *secret = key.substr(sep + 1);
  return true;
}

nlohmann::json ToJson(const KeyRecord& k) {
  return {{"name", k.name},
          {"id", k.id},
          {"secret_sha256", k.secret_hash},
          {"scope", ScopeName(k.scope)},
          {"projects", k.projects},
          {"created_at", k.created_at},
          {"expires_at", k.expires_at},
          {"allow_from", k.allow_from.text()}};
}

}  // namespace

std::string_view ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kRead:
      return "read";
    case Scope::kWrite:
      return "write";
    case Scope::kAdmin:
      return "admin";
  }
  return "read";
}

bool ParseScope(std::string_view text, Scope* out) {
  for (Scope s : {Scope::kRead, Scope::kWrite, Scope::kAdmin}) {
    if (text == ScopeName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

bool Principal::SeesProject(std::string_view project) const {
  return projects.empty() || std::find(projects.begin(), projects.end(), project) != projects.end();
}

Result<std::unique_ptr<KeyStore>> KeyStore::Open(FileSystem& fs, std::string path, Clock& clock) {
  std::unique_ptr<KeyStore> store(new KeyStore(fs, std::move(path), clock));
  TW_RETURN_IF_ERROR(store->Load());
  return store;
}

Status KeyStore::Load() {
  if (!fs_.Exists(path_)) return Status::Ok();
  TW_ASSIGN_OR_RETURN(std::string text, fs_.ReadFile(path_));
  auto bad = [&](const std::string& why) {
    return Status::Corruption("key file " + path_ + ": " + why);
  };
  Result<nlohmann::json> doc = ParseJson(text);
  if (!doc.ok()) return bad(doc.status().message());
  if (!doc->is_object() || !(*doc)["keys"].is_array()) return bad("expected {\"keys\": [...]}");
  MutexLock lock(mu_);
  for (const nlohmann::json& k : (*doc)["keys"]) {
    try {
      KeyRecord r;
      r.name = k.at("name").get<std::string>();
      r.id = k.at("id").get<std::string>();
      r.secret_hash = k.at("secret_sha256").get<std::string>();
      if (!ParseScope(k.at("scope").get<std::string>(), &r.scope))
        return bad("key " + r.name + ": bad scope");
      r.projects = k.value("projects", std::vector<std::string>{});
      r.created_at = k.value("created_at", 0.0);
      r.expires_at = k.value("expires_at", 0.0);
      Result<CidrList> allow_from = CidrList::Parse(k.value("allow_from", ""));
      if (!allow_from.ok()) return bad("key " + r.name + ": " + allow_from.status().message());
      r.allow_from = std::move(*allow_from);
      by_id_[r.id] = std::move(r);
    } catch (const nlohmann::json::exception& e) {
      return bad(e.what());
    }
  }
  return Status::Ok();
}

Status KeyStore::Save() const {
  nlohmann::json keys = nlohmann::json::array();
  for (const auto& [id, record] : by_id_) keys.push_back(ToJson(record));
  return WriteFileAtomic(fs_, path_, nlohmann::json{{"keys", keys}}.dump(1) + "\n");
}

void KeyStore::SetBootstrapKey(std::string_view key) {
  MutexLock lock(mu_);
  if (key.empty())
    bootstrap_hash_.reset();
  else
    bootstrap_hash_ = Sha256Hex(key);
}

bool KeyStore::enabled() const {
  MutexLock lock(mu_);
  return bootstrap_hash_.has_value() || !by_id_.empty();
}

Result<Principal> KeyStore::Authenticate(std::string_view presented) const {
  if (presented.empty())
    return Status::Unauthenticated("missing API key (Authorization: Bearer <key>)");
  MutexLock lock(mu_);
  if (bootstrap_hash_ && ConstantTimeEquals(Sha256Hex(presented), *bootstrap_hash_)) {
    return Principal{"api-key", Scope::kAdmin, {}, {}, std::string(kBootstrapId)};
  }
  std::string_view id, secret;
  if (!SplitKey(presented, &id, &secret)) return Status::Unauthenticated("wrong API key");
  auto it = by_id_.find(std::string(id));
  if (it == by_id_.end() || !ConstantTimeEquals(Sha256Hex(secret), it->second.secret_hash)) {
    return Status::Unauthenticated("wrong or revoked API key");
  }
  const KeyRecord& k = it->second;
  if (k.expires_at > 0 && clock_.NowUnixSeconds() >= k.expires_at) {
    return Status::Unauthenticated("API key '" + k.name + "' has expired");
  }
  return Principal{k.name, k.scope, k.projects, k.allow_from, k.id};
}

std::optional<KeyBinding> KeyStore::FindById(std::string_view key_id) const {
  MutexLock lock(mu_);
  if (key_id == kBootstrapId && bootstrap_hash_) {
    return KeyBinding{Principal{"api-key", Scope::kAdmin, {}, {}, std::string(kBootstrapId)},
                      *bootstrap_hash_, 0};
  }
  auto it = by_id_.find(std::string(key_id));
  if (it == by_id_.end()) return std::nullopt;
  const KeyRecord& k = it->second;
  return KeyBinding{Principal{k.name, k.scope, k.projects, k.allow_from, k.id}, k.secret_hash,
                    k.expires_at};
}

Result<NewKey> KeyStore::Create(const std::string& name, Scope scope,
                                std::vector<std::string> projects, double expires_at,
                                CidrList allow_from) {
  if (!ValidName(name)) {
    return Status::InvalidArgument("key name '" + name +
                                   "': 1 to 64 letters, digits, '_', '-' or '.'");
  }
  if (name == "api-key")
    return Status::InvalidArgument("key name 'api-key' is the server's --api-key");
  MutexLock lock(mu_);
  for (const auto& [id, record] : by_id_) {
    if (record.name == name)
      return Status::AlreadyExists("a key named '" + name + "' exists; revoke it first");
  }
  KeyRecord r;
  do r.id = RandomHex(kIdBytes);
  while (by_id_.contains(r.id));
  const std::string secret = RandomHex(kSecretBytes);
  r.name = name;
  r.secret_hash = Sha256Hex(secret);
  r.scope = scope;
  r.projects = std::move(projects);
  r.created_at = clock_.NowUnixSeconds();
  r.expires_at = expires_at;
  r.allow_from = std::move(allow_from);
  const std::string id = r.id;
  by_id_[id] = r;
  if (Status s = Save(); !s.ok()) {
    by_id_.erase(id);
    return s;
  }
  return NewKey{std::move(r), std::string(kPrefix) + id + "_" + secret};
}

Status KeyStore::Revoke(const std::string& name) {
  MutexLock lock(mu_);
  auto it = std::find_if(by_id_.begin(), by_id_.end(),
                         [&](const auto& e) { return e.second.name == name; });
  if (it == by_id_.end()) return Status::NotFound("no key named '" + name + "'");
  KeyRecord removed = it->second;
  by_id_.erase(it);
  if (Status s = Save(); !s.ok()) {
    by_id_[removed.id] = std::move(removed);
    return s;
  }
  return Status::Ok();
}

std::vector<KeyRecord> KeyStore::List() const {
  MutexLock lock(mu_);
  std::vector<KeyRecord> out;
  for (const auto& [id, record] : by_id_) out.push_back(record);
  std::sort(out.begin(), out.end(),
            [](const KeyRecord& a, const KeyRecord& b) { return a.name < b.name; });
  return out;
}

}  // namespace trainwatch::auth
