// S3Client: PUT, GET and HEAD of objects in one bucket of an S3-compatible object store (AWS S3,
// MinIO, Ceph RGW, s3rver), path-style (ENDPOINT/BUCKET/KEY), signed with SigV4 (sigv4.h), over
// libcurl with TLS verification on unless turned off. docs/blob_store.md.
//
// Errors name the operation, the key and what the store said (its XML <Code> and <Message>), never
// the credentials: Unavailable when the endpoint cannot be reached or answers 5xx/429 (worth
// retrying), NotFound for a missing object, PermissionDenied for 401/403, InvalidArgument for a
// missing bucket or another 4xx.
//
// Thread-safe: every call uses its own curl handle.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "blob/sigv4.h"
#include "common/clock.h"
#include "common/status.h"

namespace trainwatch::blob {

struct S3Options {
  std::string endpoint;  // "https://s3.us-east-1.amazonaws.com", "http://127.0.0.1:9000"
  std::string bucket;
  std::string prefix;  // "" or a key prefix without leading/trailing '/', "trainwatch/blobs"
  std::string region = "us-east-1";
  SigV4Credentials credentials;
  std::string ca_file;     // PEM bundle to verify the endpoint's certificate ("": the system's)
  bool verify_tls = true;  // false: accept any certificate (testing only; logged at start-up)
  double timeout_seconds = 60;
  double connect_timeout_seconds = 10;
};

// "s3://bucket/prefix" -> bucket and prefix. InvalidArgument naming what is wrong.
Status ParseS3Url(std::string_view url, std::string* bucket, std::string* prefix);

// Checks an endpoint ("http(s)://host[:port]", no path) and returns its Host header value.
Result<std::string> EndpointHost(std::string_view endpoint);

class S3Client {
 public:
  // Checks the options (endpoint, bucket, credentials present). `clock` dates the signatures and
  // must outlive the client.
  static Result<std::unique_ptr<S3Client>> Create(S3Options options, const Clock& clock);
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  // Stores `body` at prefix/name. Returns once the store answered 200 (S3 makes a PUT durable
  // before answering it).
  Status Put(std::string_view name, std::string_view body) const;
  Result<std::string> Get(std::string_view name) const;
  // Whether the bucket exists and these credentials may read it (HEAD bucket).
  Status CheckBucket() const;

  // "s3://bucket/prefix at http://endpoint" (for logs; no credentials).
  std::string Describe() const;
  std::string KeyOf(std::string_view name) const;

 private:
  S3Client(S3Options options, std::string host, const Clock& clock)
      : options_(std::move(options)), host_(std::move(host)), clock_(clock) {}

  struct Response {
    long status = 0;
    std::string body;
  };
  // One signed request; Unavailable when no HTTP answer came.
  Result<Response> Send(std::string_view method, const std::string& path,
                        std::string_view body) const;
  Status ErrorOf(std::string_view op, std::string_view what, const Response& response) const;

  S3Options options_;
  std::string host_;
  const Clock& clock_;
};

}  // namespace trainwatch::blob
