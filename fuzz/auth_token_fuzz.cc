// What a client presents as a key (`Authorization: Bearer ...`, gRPC metadata) or as a token
// (`?token=`): KeyStore::Authenticate and TokenIssuer::Authenticate on arbitrary bytes.
//
// Checks, besides memory safety: only the exact key authenticates as it (with its name and scope);
// a token is accepted only when it is byte for byte one the issuer made for a live key, and then as
// that key's name at scope read. A second mode flips bytes of a real token and of the real key:
// every variant but the original is refused.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "auth/key_store.h"
#include "auth/token_issuer.h"
#include "common/clock.h"
#include "fuzz/fuzz_support.h"

namespace {

using trainwatch::auth::KeyStore;
using trainwatch::auth::Principal;
using trainwatch::auth::Scope;
using trainwatch::auth::TokenIssuer;

struct World {
  World() {
    auto opened = KeyStore::Open(fs, "/keys.json", clock);
    FUZZ_CHECK(opened.ok(), opened.status().ToString());
    keys = std::move(*opened);
    auto created = keys->Create("trainer", Scope::kWrite, {"vision"}, 0);
    FUZZ_CHECK(created.ok(), created.status().ToString());
    key = created->key;
    auto who = keys->Authenticate(key);
    FUZZ_CHECK(who.ok(), who.status().ToString());
    issuer = std::make_unique<TokenIssuer>(*keys, clock, std::string(32, 's'), 300);
    auto issued = issuer->Issue(*who);
    FUZZ_CHECK(issued.ok(), issued.status().ToString());
    token = issued->token;
  }

  trainwatch::fuzz::MemFileSystem fs;
  trainwatch::ManualClock clock;
  std::unique_ptr<KeyStore> keys;
  std::unique_ptr<TokenIssuer> issuer;
  std::string key, token;
};

World& TheWorld() {
  static World* world = new World();  // never destroyed: the fuzzer exits without tearing down
  return *world;
}

void CheckKey(World& w, std::string_view presented) {
  auto who = w.keys->Authenticate(presented);
  if (!who.ok()) return;
  FUZZ_CHECK(presented == w.key, "a key that is not the one created authenticated");
  FUZZ_CHECK(who->key_name == "trainer" && who->scope == Scope::kWrite, "wrong principal");
}

void CheckToken(World& w, std::string_view presented) {
  auto who = w.issuer->Authenticate(presented);
  if (!who.ok()) {
    FUZZ_CHECK(who.status().message().find(w.token) == std::string::npos, "the refusal echoes the token");
    return;
  }
  FUZZ_CHECK(presented == w.token, "a forged token was accepted");
  FUZZ_CHECK(who->key_name == "trainer" && who->scope == Scope::kRead, "a token must read only, as its key");
}

void Mutate(World& w, FuzzedDataProvider& in) {
  std::string token = w.token, key = w.key;
  while (in.remaining_bytes() >= 2) {
    size_t i = in.ConsumeIntegral<size_t>();
    char c = in.ConsumeIntegral<char>();
    token[i % token.size()] = c;
    key[i % key.size()] = c;
  }
  CheckToken(w, token);
  CheckKey(w, key);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = TheWorld();
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (size > 0 && data[0] == 'M') {
    FuzzedDataProvider in(data + 1, size - 1);
    Mutate(w, in);
    return 0;
  }
  CheckKey(w, bytes);
  CheckToken(w, bytes);
  return 0;
}
