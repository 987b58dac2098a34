// Short-lived tokens: what a browser puts in a URL where it cannot send a header (the live
// WebSocket, an <img>), so that a long-lived key never appears in one (docs/security.md,
// "Short-lived tokens").
//
// A token reads "twt_<key id>_<expiry, unix milliseconds>_<mac>": the mac is an HMAC-SHA256, under
// a random secret of this process, over the key id, the expiry and the hash of the key's secret.
// It is bound to its key: it authenticates as the key's name, projects and allow-list, at scope
// read whatever the key's scope, and only while the key exists and has not expired — a revoked
// key's tokens are refused at once, and a key made again under a reused id does not revive them
// (its secret differs). The secret is never stored: tokens end with the process. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "auth/key_store.h"
#include "common/clock.h"
#include "common/status.h"

namespace trainwatch::auth {

struct IssuedToken {
  std::string token;
  double expires_at = 0;  // unix seconds
};

class TokenIssuer {
 public:
  // `keys` and `clock` must outlive the issuer. `secret`: random bytes, at least 32
  // (RandomTokenSecret); `ttl_seconds` > 0: how long a token lives.
  TokenIssuer(const KeyStore& keys, const Clock& clock, std::string secret, double ttl_seconds);
  TokenIssuer(const TokenIssuer&) = delete;
  TokenIssuer& operator=(const TokenIssuer&) = delete;

  // A token for the key `who` authenticated with (its key_id). Unauthenticated when that key is
  // revoked or expired. A server without keys (key_id "") gets a token that no server with keys
  // accepts.
  Result<IssuedToken> Issue(const Principal& who) const;

  // The principal a token stands for — its key's, at scope read. Unauthenticated (the message says
  // why, never echoing the token) for a malformed, forged or expired token, or one whose key was
  // revoked or has expired.
  Result<Principal> Authenticate(std::string_view token) const;

  double ttl_seconds() const { return ttl_seconds_; }

 private:
  std::string Mac(std::string_view key_id, std::string_view expiry_ms, std::string_view secret_hash) const;

  const KeyStore& keys_;
  const Clock& clock_;
  const std::string secret_;
  const double ttl_seconds_;
};

// 32 random bytes for a TokenIssuer's secret; Internal when the system has no entropy to give.
Result<std::string> RandomTokenSecret();

}  // namespace trainwatch::auth
