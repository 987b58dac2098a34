#include "auth/token_issuer.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <charconv>
#include <cmath>
#include <cstdint>

#include "common/strings.h"

namespace trainwatch::auth {
namespace {

constexpr std::string_view kPrefix = "twt_";
constexpr size_t kMacHexDigits = 64;
constexpr size_t kSecretBytes = 32;

struct TokenParts {
  std::string_view key_id, expiry_ms, mac;
};

// "twt_<key id>_<expiry ms>_<mac>" -> its parts; false for anything else. The key id may itself
// hold '-' but never '_'.
bool SplitToken(std::string_view token, TokenParts* out) {
  if (!token.starts_with(kPrefix)) return false;
  token.remove_prefix(kPrefix.size());
  size_t mac_sep = token.rfind('_');
  if (mac_sep == std::string_view::npos || mac_sep == 0 || token.size() - mac_sep - 1 != kMacHexDigits) return false;
  size_t expiry_sep = token.rfind('_', mac_sep - 1);
  if (expiry_sep == std::string_view::npos) return false;
  out->key_id = token.substr(0, expiry_sep);
  out->expiry_ms = token.substr(expiry_sep + 1, mac_sep - expiry_sep - 1);
  out->mac = token.substr(mac_sep + 1);
  return out->key_id.find('_') == std::string_view::npos;
}

bool ParseMillis(std::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 15) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size() && *out > 0;
}

}  // namespace

TokenIssuer::TokenIssuer(const KeyStore& keys, const Clock& clock, std::string secret, double ttl_seconds)
    : keys_(keys), clock_(clock), secret_(std::move(secret)), ttl_seconds_(ttl_seconds) {}

std::string TokenIssuer::Mac(std::string_view key_id, std::string_view expiry_ms,
                             std::string_view secret_hash) const {
  std::string message = "trainwatch token v1\n";
  message.append(key_id).append("\n").append(expiry_ms).append("\n").append(secret_hash);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &size);
  return LowerHex(std::string_view(reinterpret_cast<const char*>(digest), size));
}

Result<IssuedToken> TokenIssuer::Issue(const Principal& who) const {
  std::string secret_hash;  // "" for a server without keys
  if (!who.key_id.empty()) {
    std::optional<KeyBinding> key = keys_.FindById(who.key_id);
    if (!key) return Status::Unauthenticated("API key '" + who.key_name + "' was revoked");
    if (key->expires_at > 0 && clock_.NowUnixSeconds() >= key->expires_at) {
      return Status::Unauthenticated("API key '" + who.key_name + "' has expired");
    }
    secret_hash = std::move(key->secret_hash);
  }
  const int64_t expiry_ms = std::llround((clock_.NowUnixSeconds() + ttl_seconds_) * 1000);
  const std::string expiry = std::to_string(expiry_ms);
  return IssuedToken{std::string(kPrefix) + who.key_id + "_" + expiry + "_" + Mac(who.key_id, expiry, secret_hash),
                     static_cast<double>(expiry_ms) / 1000};
}

Result<Principal> TokenIssuer::Authenticate(std::string_view token) const {
  TokenParts parts;
  int64_t expiry_ms = 0;
  if (!SplitToken(token, &parts) || !ParseMillis(parts.expiry_ms, &expiry_ms)) {
    return Status::Unauthenticated("malformed token (a token comes from POST /api/v1/tokens)");
  }
  if (parts.key_id.empty()) {
    return Status::Unauthenticated("token refused: it was issued while this server had no keys");
  }
  std::optional<KeyBinding> key = keys_.FindById(parts.key_id);
  if (!key) return Status::Unauthenticated("token refused: its key was revoked");
  if (!ConstantTimeEquals(Mac(parts.key_id, parts.expiry_ms, key->secret_hash), parts.mac)) {
    return Status::Unauthenticated(
        "token refused: not issued by this server process (tokens end when the server restarts)");
  }
  const double now = clock_.NowUnixSeconds();
  if (now * 1000 >= static_cast<double>(expiry_ms)) {
    return Status::Unauthenticated("token expired; fetch a new one with POST /api/v1/tokens");
  }
  if (key->expires_at > 0 && now >= key->expires_at) {
    return Status::Unauthenticated("token refused: API key '" + key->principal.key_name + "' has expired");
  }
  Principal who = std::move(key->principal);
  who.scope = Scope::kRead;  // a token only reads, whatever its key may do
  return who;
}

Result<std::string> RandomTokenSecret() {
  std::string secret(kSecretBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()), static_cast<int>(secret.size())) != 1) {
    return Status::Internal("no random bytes for the token secret (RAND_bytes failed)");
  }
  return secret;
}

}  // namespace trainwatch::auth
