#include "blob/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <ctime>

#include "common/strings.h"

namespace trainwatch::blob {
namespace {

// Trims the ends and folds runs of spaces into one (the canonical header value).
std::string CanonicalValue(std::string_view value) {
  std::string out;
  bool space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

std::string SignedHeaders(const SigV4Request& request) {
  std::string out;
  for (const auto& [name, value] : request.headers) {
    if (!out.empty()) out.push_back(';');
    out += name;
  }
  return out;
}

std::string_view DateOf(std::string_view amz_date) { return amz_date.substr(0, 8); }

std::string CredentialScope(const SigV4Scope& scope) {
  return std::string(DateOf(scope.amz_date)) + "/" + scope.region + "/" + scope.service +
         "/aws4_request";
}

}  // namespace

std::string UriEncodePath(std::string_view path) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 15]);
    }
  }
  return out;
}

std::string AmzDate(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return LowerHex(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string CanonicalRequest(const SigV4Request& request) {
  std::string out =
      request.method + "\n" + request.canonical_uri + "\n" + request.canonical_query + "\n";
  for (const auto& [name, value] : request.headers)
    out += name + ":" + CanonicalValue(value) + "\n";
  out += "\n" + SignedHeaders(request) + "\n" + request.payload_sha256_hex;
  return out;
}

std::string StringToSign(const SigV4Scope& scope, std::string_view canonical_request) {
  return "AWS4-HMAC-SHA256\n" + scope.amz_date + "\n" + CredentialScope(scope) + "\n" +
         Sha256Hex(canonical_request);
}

std::string SigningKey(std::string_view secret_access_key, std::string_view date,
                       std::string_view region, std::string_view service) {
  std::string k = HmacSha256("AWS4" + std::string(secret_access_key), date);
  k = HmacSha256(k, region);
  k = HmacSha256(k, service);
  return HmacSha256(k, "aws4_request");
}

std::string Signature(const SigV4Request& request, const SigV4Scope& scope,
                      std::string_view secret_access_key) {
  const std::string key =
      SigningKey(secret_access_key, DateOf(scope.amz_date), scope.region, scope.service);
  return LowerHex(HmacSha256(key, StringToSign(scope, CanonicalRequest(request))));
}

std::string AuthorizationHeader(const SigV4Request& request, const SigV4Scope& scope,
                                const SigV4Credentials& credentials) {
  return "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + CredentialScope(scope) +
         ", SignedHeaders=" + SignedHeaders(request) +
         ", Signature=" + Signature(request, scope, credentials.secret_access_key);
}

}  // namespace trainwatch::blob
