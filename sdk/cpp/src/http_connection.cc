// The HTTP transport (POST /api/v1/write, protobuf body) and gRPC discovery (GET /api/v1/info),
// over libcurl.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include "common/json.h"
#include "common/mutex.h"
#include "connection.h"
#include "tls_policy.h"

namespace trainwatch::sdk {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

int AbortIfCancelled(void* cancelled, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(cancelled)->load() ? 1 : 0;
}

std::string TrimSlash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

// TLS 1.2 or later; the CA bundle and client certificate of `options` when given (an http:// URL
// ignores them).
void SetTlsOptions(CURL* curl, const ConnectOptions& options) {
  curl_easy_setopt(curl, CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  if (!options.tls_ca_file.empty())
    curl_easy_setopt(curl, CURLOPT_CAINFO, options.tls_ca_file.c_str());
  if (!options.tls_cert_file.empty())
    curl_easy_setopt(curl, CURLOPT_SSLCERT, options.tls_cert_file.c_str());
  if (!options.tls_key_file.empty())
    curl_easy_setopt(curl, CURLOPT_SSLKEY, options.tls_key_file.c_str());
}

struct Reply {
  long code = 0;
  std::string body;
};

// One request on `curl` (reused between calls for keep-alive). Unavailable if no reply came.
Result<Reply> Perform(CURL* curl, const std::string& url, const std::string* post_body,
                      const ConnectOptions& options, double timeout_seconds,
                      std::atomic<bool>* cancelled) {
  TW_RETURN_IF_ERROR(CheckKeyNotInClear(options.api_key, IsHttpsUrl(url), HostOfUrl(url),
                                        TrimSlash(options.server)));
  Reply reply;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  SetTlsOptions(curl, options);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options.connect_timeout_seconds * 1000));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_seconds * 1000));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, AbortIfCancelled);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, cancelled);
  curl_slist* headers = nullptr;
  if (!options.api_key.empty()) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + options.api_key).c_str());
  }
  if (post_body) {
    headers = curl_slist_append(headers, "Content-Type: application/x-protobuf");
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post_body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post_body->size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  CURLcode rc = curl_easy_perform(curl);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    return Status::Unavailable(url + ": " + curl_easy_strerror(rc));
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.code);
  return reply;
}

// Turns the server's reply to POST /api/v1/write into an ack. 2xx and 400 (some points rejected)
// are final; anything else means nothing was stored and the batch must be sent again.
v1::WriteAck AckFromReply(const Reply& reply, uint64_t sequence) {
  v1::WriteAck ack;
  ack.set_sequence(sequence);
  nlohmann::json j = ParseJsonOrDiscarded(reply.body);
  bool final_reply = (reply.code >= 200 && reply.code < 300) ||
                     (reply.code == 400 && j.is_object() && j.contains("points_accepted"));
  if (!final_reply) {
    ack.set_refused(true);
    std::string why = j.is_object() && j.contains("error") && j["error"].is_string()
                          ? j["error"].get<std::string>()
                          : reply.body.substr(0, 200);
    ack.add_errors("HTTP " + std::to_string(reply.code) + ": " + why);
    return ack;
  }
  if (j.is_object()) {
    ack.set_points_accepted(j.value("points_accepted", uint64_t{0}));
    ack.set_points_rejected(j.value("points_rejected", uint64_t{0}));
    ack.set_duplicate(j.value("duplicate_batch", false));
    if (j.contains("errors") && j["errors"].is_array()) {
      for (const auto& e : j["errors"]) {
        if (e.is_object() && e.contains("error") && e["error"].is_string())
          ack.add_errors(e["error"].get<std::string>());
      }
    }
  }
  return ack;
}

class HttpConnection final : public Connection {
 public:
  explicit HttpConnection(ConnectOptions options)
      : options_(std::move(options)),
        url_(TrimSlash(options_.server) + "/api/v1/write"),
        curl_(curl_easy_init()) {}
  ~HttpConnection() override { curl_easy_cleanup(curl_); }

  const char* name() const override { return "http"; }

  bool Send(const std::string& bytes, uint64_t sequence) override {
    if (cancelled_) return false;
    auto reply =
        Perform(curl_, url_, &bytes, options_, options_.request_timeout_seconds, &cancelled_);
    MutexLock lock(mu_);
    if (!reply.ok()) {
      error_ = reply.status().message();
      broken_ = true;
      cv_.notify_all();
      return false;
    }
    acks_.push_back(AckFromReply(*reply, sequence));
    cv_.notify_all();
    return true;
  }

  bool ReadAck(v1::WriteAck* ack) override {
    MutexLock lock(mu_);
    cv_.wait(lock.native(),
             [&]() TW_REQUIRES(mu_) { return !acks_.empty() || broken_ || closed_ || cancelled_; });
    if (acks_.empty() || cancelled_) return false;
    *ack = std::move(acks_.front());
    acks_.pop_front();
    return true;
  }

  void CloseSend() override {
    MutexLock lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }

  void Cancel() override {
    cancelled_ = true;
    MutexLock lock(mu_);
    cv_.notify_all();
  }

  std::string Error() override {
    MutexLock lock(mu_);
    if (cancelled_) return "cancelled";
    return error_.empty() ? "closed" : error_;
  }

 private:
  const ConnectOptions options_;
  const std::string url_;
  CURL* const curl_;  // used by the sending thread only
  std::atomic<bool> cancelled_{false};
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::WriteAck> acks_ TW_GUARDED_BY(mu_);
  bool broken_ TW_GUARDED_BY(mu_) = false;
  bool closed_ TW_GUARDED_BY(mu_) = false;
  std::string error_ TW_GUARDED_BY(mu_);
};

// One GET of `path` on the server, on a handle of its own.
Result<Reply> Get(const ConnectOptions& options, const std::string& path) {
  GlobalInit();
  CURL* curl = curl_easy_init();
  std::atomic<bool> never{false};
  auto reply = Perform(curl, TrimSlash(options.server) + path, nullptr, options,
                       options.connect_timeout_seconds, &never);
  curl_easy_cleanup(curl);
  return reply;
}

}  // namespace

Result<GrpcEndpoint> DiscoverGrpcEndpoint(const ConnectOptions& options) {
  auto reply = Get(options, "/api/v1/info");
  if (!reply.ok()) return reply.status();
  if (reply->code == 401 || reply->code == 403) {
    return Status::Unavailable("the server at " + options.server + " refused the API key (HTTP " +
                               std::to_string(reply->code) + ")");
  }
  GrpcEndpoint endpoint;
  if (reply->code != 200) return endpoint;  // an older server: HTTP only
  nlohmann::json j = ParseJsonOrDiscarded(reply->body);
  if (!j.is_object() || !j.contains("grpc") || !j["grpc"].is_string()) return endpoint;
  // A server without the field is older than TLS: plaintext.
  endpoint.tls = j.contains("grpc_tls") && j["grpc_tls"].is_boolean() && j["grpc_tls"].get<bool>();
  std::string target = j["grpc"].get<std::string>();
  size_t colon = target.rfind(':');
  if (colon == std::string::npos) return endpoint;
  std::string host = target.substr(0, colon);
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::") {
    target = HostOfUrl(options.server) + target.substr(colon);
  }
  endpoint.target = std::move(target);
  return endpoint;
}

Result<std::unique_ptr<Connection>> ConnectHttp(const ConnectOptions& options) {
  auto reply = Get(options, "/healthz");
  if (!reply.ok()) return reply.status();
  return std::unique_ptr<Connection>(new HttpConnection(options));
}

}  // namespace trainwatch::sdk
