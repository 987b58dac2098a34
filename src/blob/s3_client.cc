#include "blob/s3_client.h"

#include <curl/curl.h>

#include <memory>

namespace trainwatch::blob {
namespace {

size_t KeepBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// The text of <Tag>...</Tag> in an S3 error document, or "".
std::string XmlField(std::string_view xml, std::string_view tag) {
  const std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
  size_t start = xml.find(open);
  if (start == std::string_view::npos) return "";
  start += open.size();
  size_t end = xml.find(close, start);
  if (end == std::string_view::npos || end - start > 512) return "";
  return std::string(xml.substr(start, end - start));
}

bool ValidBucket(std::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (char c : bucket) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return true;
}

}  // namespace

Status ParseS3Url(std::string_view url, std::string* bucket, std::string* prefix) {
  constexpr std::string_view kScheme = "s3://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return Status::InvalidArgument("blob store '" + std::string(url) +
                                   "': expected \"embedded\" or s3://bucket[/prefix]");
  }
  std::string_view rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  *bucket = std::string(rest.substr(0, slash));
  if (!ValidBucket(*bucket)) {
    return Status::InvalidArgument("blob store '" + std::string(url) + "': bucket name '" +
                                   *bucket + "' must be 3-63 characters of a-z, 0-9, '-' and '.'");
  }
  std::string p = slash == std::string_view::npos ? "" : std::string(rest.substr(slash + 1));
  while (!p.empty() && p.back() == '/') p.pop_back();
  if (p.find("//") != std::string::npos || (!p.empty() && p.front() == '/')) {
    return Status::InvalidArgument("blob store '" + std::string(url) + "': empty prefix segment");
  }
  *prefix = std::move(p);
  return Status::Ok();
}

Result<std::string> EndpointHost(std::string_view endpoint) {
  std::string_view rest;
  if (endpoint.substr(0, 7) == "http://") {
    rest = endpoint.substr(7);
  } else if (endpoint.substr(0, 8) == "https://") {
    rest = endpoint.substr(8);
  } else {
    return Status::InvalidArgument("s3 endpoint '" + std::string(endpoint) +
                                   "' must start with http:// or https://");
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty() || rest.find('/') != std::string_view::npos ||
      rest.find('@') != std::string_view::npos || rest.find('?') != std::string_view::npos) {
    return Status::InvalidArgument("s3 endpoint '" + std::string(endpoint) +
                                   "' must be scheme://host[:port] with no path, user or query");
  }
  return std::string(rest);
}

Result<std::unique_ptr<S3Client>> S3Client::Create(S3Options options, const Clock& clock) {
  while (!options.endpoint.empty() && options.endpoint.back() == '/') options.endpoint.pop_back();
  TW_ASSIGN_OR_RETURN(std::string host, EndpointHost(options.endpoint));
  if (!ValidBucket(options.bucket)) {
    return Status::InvalidArgument("s3 bucket '" + options.bucket + "' is not a valid name");
  }
  if (options.credentials.access_key_id.empty() || options.credentials.secret_access_key.empty()) {
    return Status::InvalidArgument(
        "s3 credentials missing: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the "
        "environment");
  }
  if (options.region.empty()) return Status::InvalidArgument("s3 region is empty");
  return std::unique_ptr<S3Client>(new S3Client(std::move(options), std::move(host), clock));
}

std::string S3Client::KeyOf(std::string_view name) const {
  return options_.prefix.empty() ? std::string(name) : options_.prefix + "/" + std::string(name);
}

std::string S3Client::Describe() const {
  return "s3://" + options_.bucket + (options_.prefix.empty() ? "" : "/" + options_.prefix) +
         " at " + options_.endpoint;
}

Result<S3Client::Response> S3Client::Send(std::string_view method, const std::string& path,
                                          std::string_view body) const {
  SigV4Request request;
  request.method = std::string(method);
  request.canonical_uri = UriEncodePath(path);
  request.payload_sha256_hex = Sha256Hex(body);
  const SigV4Scope scope{AmzDate(clock_.NowUnixSeconds()), options_.region, "s3"};
  request.headers = {{"host", host_},
                     {"x-amz-content-sha256", request.payload_sha256_hex},
                     {"x-amz-date", scope.amz_date}};
  if (!options_.credentials.session_token.empty()) {
    request.headers["x-amz-security-token"] = options_.credentials.session_token;
  }
  const std::string authorization = AuthorizationHeader(request, scope, options_.credentials);

  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return Status::Internal("curl_easy_init failed");
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : request.headers) {
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  }
  headers = curl_slist_append(headers, ("Authorization: " + authorization).c_str());
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  if (method == "PUT")
    headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers,
                                                                          curl_slist_free_all);
  const std::string url = options_.endpoint + request.canonical_uri;
  Response response;
  char error[CURL_ERROR_SIZE] = {0};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout_seconds * 1000));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.connect_timeout_seconds * 1000));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "trainwatch-blobs/1");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, KeepBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  if (!options_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
  if (!options_.verify_tls) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (method == "PUT") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  } else if (method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  }
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    return Status::Unavailable(std::string("cannot reach ") + options_.endpoint + ": " +
                               (error[0] ? error : curl_easy_strerror(rc)));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

Status S3Client::ErrorOf(std::string_view op, std::string_view what,
                         const Response& response) const {
  std::string code = XmlField(response.body, "Code"), message = XmlField(response.body, "Message");
  std::string text = std::string(op) + " " + std::string(what) + " in " + Describe() + ": HTTP " +
                     std::to_string(response.status);
  if (!code.empty()) text += " " + code;
  if (!message.empty()) text += " (" + message + ")";
  if (response.status >= 500 || response.status == 429) return Status::Unavailable(text);
  if (response.status == 401 || response.status == 403) return Status::PermissionDenied(text);
  if (response.status == 404 && code != "NoSuchBucket") return Status::NotFound(text);
  return Status::InvalidArgument(text);
}

Status S3Client::Put(std::string_view name, std::string_view body) const {
  const std::string key = KeyOf(name);
  TW_ASSIGN_OR_RETURN(Response response, Send("PUT", "/" + options_.bucket + "/" + key, body));
  if (response.status == 200) return Status::Ok();
  return ErrorOf("storing", key, response);
}

Result<std::string> S3Client::Get(std::string_view name) const {
  const std::string key = KeyOf(name);
  TW_ASSIGN_OR_RETURN(Response response, Send("GET", "/" + options_.bucket + "/" + key, ""));
  if (response.status == 200) return std::move(response.body);
  return ErrorOf("reading", key, response);
}

Status S3Client::CheckBucket() const {
  TW_ASSIGN_OR_RETURN(Response response, Send("HEAD", "/" + options_.bucket, ""));
  if (response.status == 200) return Status::Ok();
  if (response.status == 404) response.body = "<Code>NoSuchBucket</Code>";
  return ErrorOf("checking", "the bucket", response);
}

}  // namespace trainwatch::blob
