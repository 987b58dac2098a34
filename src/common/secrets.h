// Keeping secrets out of what trainwatch stores, answers and logs (docs/security.md):
// - SecretMasker replaces the values of config entries and tags whose key looks like a secret
//   ("db_password", "OPENAI_API_KEY", "apiKey", "auth": ...) before they are stored — so that no
//   answer, export, log line or alert can show them — and the SDK does the same before sending.
// - RedactUrl shortens a receiver URL to what identifies it without its credentials.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainwatch {

// What a masked value becomes.
inline constexpr std::string_view kMaskedValue = "***";

class SecretMasker {
 public:
  // The patterns of docs/security.md: password, passwd, secret, token, api_key, apikey,
  // access_key, private_key, credential(s), auth.
  static const std::vector<std::string>& DefaultPatterns();

  SecretMasker() : SecretMasker(DefaultPatterns()) {}
  // Each pattern is a key's words ("api_key", "api-key", "apiKey" and "API_KEY" are the same two
  // words); a key is a secret when its words contain a pattern's words in a row. Words, not
  // substrings: "max_tokens", "tokenizer" and "author" are not secrets, "hf_token" is.
  explicit SecretMasker(const std::vector<std::string>& patterns);

  bool IsSecretKey(std::string_view key) const;
  // Replaces, at any depth, the value of every member whose key is a secret (objects and arrays
  // whole; null and booleans are kept: they hide nothing). Returns how many were masked.
  int Mask(nlohmann::json* doc) const;
  // A JSON document (a run config) with its secrets masked; the text itself when it has none or is
  // not JSON (the caller's validation refuses that).
  std::string MaskJsonText(const std::string& json) const;
  // "key=value" and "key:value" tags with a secret key keep the key: "token=***".
  std::string MaskTag(std::string_view tag) const;

 private:
  std::vector<std::vector<std::string>> patterns_;  // each as its words
};

// A key's words, lower case: split at every character that is not a letter or digit and at
// case changes, "OpenAI-APIKey" -> {"open", "ai", "api", "key"}.
std::vector<std::string> KeyWords(std::string_view key);

// "https://hooks.slack.com/services/T0/B0/XXXX" -> "https://hooks.slack.com/…": scheme, host and
// port, without user, password, path or query (where webhook tokens live).
std::string RedactUrl(std::string_view url);

}  // namespace trainwatch
