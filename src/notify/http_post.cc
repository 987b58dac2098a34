#include "notify/http_post.h"

#include <curl/curl.h>

#include <mutex>

#include "common/secrets.h"

namespace trainwatch::notify {
namespace {

constexpr size_t kMaxReplyBytes = 4096;  // kept for error messages only

size_t KeepReply(char* data, size_t size, size_t n, void* out) {
  auto* reply = static_cast<std::string*>(out);
  size_t bytes = size * n;
  if (reply->size() < kMaxReplyBytes)
    reply->append(data, std::min(bytes, kMaxReplyBytes - reply->size()));
  return bytes;
}

// The reply body, shortened and on one line, for an error message.
std::string Snippet(const std::string& body) {
  std::string out = body.substr(0, 200);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

// A curl error that means the URL itself can never work.
bool IsPermanentCurlError(CURLcode code) {
  return code == CURLE_UNSUPPORTED_PROTOCOL || code == CURLE_URL_MALFORMAT;
}

}  // namespace

void EnsureCurlInitialized() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Status PerformHttpPost(const HttpPost& post) {
  EnsureCurlInitialized();
  CURL* curl = curl_easy_init();
  // Webhook URLs carry their tokens (Slack's path, a query's ?token=): only the host is ever shown.
  const std::string what = "POST " + RedactUrl(post.url);
  if (curl == nullptr) return Status::Unavailable(what + ": curl_easy_init failed");
  std::string reply;
  char error[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  for (const std::string& h : post.headers) headers = curl_slist_append(headers, h.c_str());
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  curl_easy_setopt(curl, CURLOPT_URL, post.url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(post.timeout_seconds * 1000));
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post.body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post.body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "trainwatch-notify/1");
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, KeepReply);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  CURLcode rc = curl_easy_perform(curl);
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);

  if (rc != CURLE_OK) {
    std::string reason = error[0] != '\0' ? error : curl_easy_strerror(rc);
    if (IsPermanentCurlError(rc)) return Status::InvalidArgument(what + ": " + reason);
    return Status::Unavailable(what + ": " + reason);
  }
  if (code >= 200 && code < 300) return Status::Ok();
  std::string reason = what + ": HTTP " + std::to_string(code) + " " + Snippet(reply);
  if (code >= 500 || code == 408 || code == 429) return Status::Unavailable(reason);
  return Status::InvalidArgument(reason);
}

}  // namespace trainwatch::notify
