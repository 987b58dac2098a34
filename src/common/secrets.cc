#include "common/secrets.h"

#include <algorithm>
#include <cctype>

#include "common/json.h"

namespace trainwatch {
namespace {

bool IsUpper(char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; }
bool IsLower(char c) { return std::islower(static_cast<unsigned char>(c)) != 0; }
bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::vector<std::string> KeyWords(std::string_view key) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (size_t i = 0; i < key.size(); ++i) {
    char c = key[i];
    if (!IsWordChar(c)) {
      flush();
      continue;
    }
    if (i > 0 && IsUpper(c)) {
      char prev = key[i - 1];
      bool next_lower = i + 1 < key.size() && IsLower(key[i + 1]);
      // "apiKey": a capital after a small letter; "APIKey": the capital that starts "Key".
      if (IsLower(prev) || (IsUpper(prev) && next_lower)) flush();
    }
    word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  flush();
  return words;
}

const std::vector<std::string>& SecretMasker::DefaultPatterns() {
  static const std::vector<std::string> kPatterns = {
      "password", "passwd",      "secret",     "token",       "api_key", "apikey",
      "access_key", "private_key", "credential", "credentials", "auth"};
  return kPatterns;
}

SecretMasker::SecretMasker(const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns) {
    std::vector<std::string> words = KeyWords(p);
    if (!words.empty()) patterns_.push_back(std::move(words));
  }
}

bool SecretMasker::IsSecretKey(std::string_view key) const {
  const std::vector<std::string> words = KeyWords(key);
  for (const auto& pattern : patterns_) {
    if (std::search(words.begin(), words.end(), pattern.begin(), pattern.end()) != words.end()) return true;
  }
  return false;
}

int SecretMasker::Mask(nlohmann::json* doc) const {
  int masked = 0;
  if (doc->is_object()) {
    for (auto it = doc->begin(); it != doc->end(); ++it) {
      if (IsSecretKey(it.key()) && !it->is_null() && !it->is_boolean()) {
        *it = kMaskedValue;
        ++masked;
      } else {
        masked += Mask(&*it);
      }
    }
  } else if (doc->is_array()) {
    for (auto& element : *doc) masked += Mask(&element);
  }
  return masked;
}

std::string SecretMasker::MaskJsonText(const std::string& json) const {
  nlohmann::json doc = ParseJsonOrDiscarded(json);
  if (doc.is_discarded() || Mask(&doc) == 0) return json;
  return doc.dump();
}

std::string SecretMasker::MaskTag(std::string_view tag) const {
  size_t sep = tag.find_first_of("=:");
  if (sep == std::string_view::npos || sep + 1 == tag.size() || !IsSecretKey(tag.substr(0, sep))) {
    return std::string(tag);
  }
  return std::string(tag.substr(0, sep + 1)) + std::string(kMaskedValue);
}

std::string RedactUrl(std::string_view url) {
  size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(kMaskedValue);
  size_t authority_start = scheme + 3;
  size_t authority_end = std::min(url.find_first_of("/?#", authority_start), url.size());
  std::string_view authority = url.substr(authority_start, authority_end - authority_start);
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  std::string out = std::string(url.substr(0, authority_start)) + std::string(authority);
  if (authority_end < url.size()) out += "/…";
  return out;
}

}  // namespace trainwatch
