#include "import_export_http.h"

#include <curl/curl.h>

#include <cctype>
#include <cstdlib>
#include <mutex>

#include "trainwatch/key_policy.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::tools {
namespace {

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

HttpClient::HttpClient(std::string server, std::string api_key, std::string tls_ca_file)
    : server_(std::move(server)),
      api_key_(std::move(api_key)),
      tls_ca_file_(std::move(tls_ca_file)) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  while (!server_.empty() && server_.back() == '/') server_.pop_back();
  if (!api_key_.empty()) auth_header_ = "Authorization: Bearer " + api_key_;
  if (tls_ca_file_.empty()) {
    if (const char* ca = std::getenv("TRAINWATCH_TLS_CA"); ca && *ca) tls_ca_file_ = ca;
  }
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

Result<HttpReply> HttpClient::Get(std::string_view path, double timeout_seconds) {
  return Perform(path, nullptr, timeout_seconds, {});
}

Result<HttpReply> HttpClient::Post(std::string_view path, std::string_view body,
                                   double timeout_seconds, std::string_view content_type) {
  const std::string copy(body);
  return Perform(path, &copy, timeout_seconds, content_type);
}

Result<HttpReply> HttpClient::Perform(std::string_view path, const std::string* body,
                                      double timeout_seconds, std::string_view content_type) {
  CURL* curl = static_cast<CURL*>(curl_);
  if (!curl) return Status::Internal("curl_easy_init failed");
  const std::string url = server_ + std::string(path);
  if (std::string refusal = KeyInClearRefusal(server_, api_key_); !refusal.empty()) {
    return Status::PermissionDenied(std::move(refusal));
  }
  HttpReply reply;
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  if (!tls_ca_file_.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, tls_ca_file_.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_seconds * 1000));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  curl_slist* headers = nullptr;
  if (!auth_header_.empty()) headers = curl_slist_append(headers, auth_header_.c_str());
  if (body) {
    const std::string type_header = "Content-Type: " + std::string(content_type);
    headers = curl_slist_append(headers, type_header.c_str());
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  }
  if (headers) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) return Status::Unavailable(url + ": " + curl_easy_strerror(rc));
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

Status RewindRunAfterFlush(Client& client, HttpClient& http, const std::string& project,
                           const std::string& run, int64_t step, double flush_timeout) {
  if (!client.Flush(flush_timeout)) {
    return Status::Unavailable("the points before it were not acknowledged within " +
                               std::to_string(static_cast<int64_t>(flush_timeout)) + " s");
  }
  const std::string body = "{\"step\":" + std::to_string(step) + "}";
  Result<HttpReply> reply = http.Post(
      "/api/v1/runs/rewind?project=" + UrlEncode(project) + "&run=" + UrlEncode(run), body);
  if (!reply.ok()) return reply.status();
  if (reply->status == 200 || reply->status == 404) return Status::Ok();
  return Status::Unavailable("POST /api/v1/runs/rewind answered HTTP " +
                             std::to_string(reply->status) + ": " + reply->body);
}

Status RewindSeriesAfterFlush(Client& client, HttpClient& http, const std::string& project,
                              const std::string& run, int64_t step,
                              const std::vector<std::string>& series, double flush_timeout) {
  if (!client.Flush(flush_timeout)) {
    return Status::Unavailable("the points before it were not acknowledged within " +
                               std::to_string(static_cast<int64_t>(flush_timeout)) + " s");
  }
  v1::WriteRequest request;
  v1::RunBatch* batch = request.add_runs();
  batch->set_project(project);
  batch->set_run(run);
  v1::RunMetadata* meta = batch->mutable_metadata();
  meta->set_rewind_step(step);
  for (const std::string& name : series) meta->add_rewind_series(name);
  Result<HttpReply> reply =
      http.Post("/api/v1/write", request.SerializeAsString(), 60, "application/x-protobuf");
  if (!reply.ok()) return reply.status();
  if (reply->status == 200) return Status::Ok();
  return Status::Unavailable("POST /api/v1/write (a series rewind) answered HTTP " +
                             std::to_string(reply->status) + ": " + reply->body);
}

}  // namespace trainwatch::tools
