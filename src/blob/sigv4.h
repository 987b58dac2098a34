// AWS Signature Version 4 (docs/blob_store.md): the canonical request, the string to sign, the
// signing key and the Authorization header of one HTTP request, as AWS specifies them
// ("Signature Version 4 signing process"). Pure functions: the caller supplies the time.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace trainwatch::blob {

struct SigV4Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // "" unless temporary credentials (sent as x-amz-security-token)
};

// What is signed of one request. `canonical_uri` is the path as sent, already percent-encoded
// (S3 paths are encoded once: UriEncodePath); `canonical_query` the query string with its
// parameters sorted and encoded ("" for none). `headers` maps lower-case names to values and must
// hold every header to sign, host and x-amz-date included (multiple spaces inside a value are
// folded, ends trimmed, as the specification asks).
struct SigV4Request {
  std::string method;
  std::string canonical_uri;
  std::string canonical_query;
  std::map<std::string, std::string> headers;
  std::string payload_sha256_hex;  // hex SHA-256 of the body, or "UNSIGNED-PAYLOAD"
};

struct SigV4Scope {
  std::string amz_date;  // "20150830T123600Z"
  std::string region;    // "us-east-1"
  std::string service;   // "s3"
};

// Percent-encodes a path the way SigV4 and S3 expect: every byte but A-Z a-z 0-9 - . _ ~ and '/'.
std::string UriEncodePath(std::string_view path);

// "20150830T123600Z" of a unix time (UTC).
std::string AmzDate(double unix_seconds);

std::string Sha256Hex(std::string_view data);
std::string HmacSha256(std::string_view key, std::string_view data);  // raw 32 bytes

std::string CanonicalRequest(const SigV4Request& request);
std::string StringToSign(const SigV4Scope& scope, std::string_view canonical_request);
// kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request"),
// raw bytes.
std::string SigningKey(std::string_view secret_access_key, std::string_view date,
                       std::string_view region, std::string_view service);
// The hex signature of a request.
std::string Signature(const SigV4Request& request, const SigV4Scope& scope,
                      std::string_view secret_access_key);
// "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/service/aws4_request,
// SignedHeaders=host;x-amz-date, Signature=...".
std::string AuthorizationHeader(const SigV4Request& request, const SigV4Scope& scope,
                                const SigV4Credentials& credentials);

}  // namespace trainwatch::blob
