#include "notify/email_notifier.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "common/secrets.h"
#include "notify/http_post.h"

namespace trainwatch::notify {
namespace {

// A header value on one line: CR and LF (header injection) become spaces.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return text;
}

bool IsAscii(const std::string& text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// RFC 2047 "=?UTF-8?B?...?=" for non-ASCII header text; ASCII text is returned unchanged.
std::string EncodeHeaderText(const std::string& text) {
  if (IsAscii(text)) return text;
  std::string out((text.size() + 2) / 3 * 4 + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  out.resize(static_cast<size_t>(n));
  return "=?UTF-8?B?" + out + "?=";
}

std::string RfcDate(double now) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::time_t secs = static_cast<std::time_t>(std::isfinite(now) ? std::floor(now) : 0);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d +0000", kDays[tm.tm_wday],
                tm.tm_mday, kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                tm.tm_sec);
  return buf;
}

std::string FormatNumber(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Body text with every line ending in CRLF, whatever `text` used.
void AppendLines(std::string* out, const std::string& text) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    std::string line =
        text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out->append(line).append("\r\n");
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

struct Upload {
  const std::string* data;
  size_t offset = 0;
};

size_t ReadUpload(char* buffer, size_t size, size_t n, void* arg) {
  auto* upload = static_cast<Upload*>(arg);
  size_t len = std::min(size * n, upload->data->size() - upload->offset);
  std::memcpy(buffer, upload->data->data() + upload->offset, len);
  upload->offset += len;
  return len;
}

std::string Domain(const std::string& address) {
  size_t at = address.rfind('@');
  return at == std::string::npos ? "trainwatch" : address.substr(at + 1);
}

}  // namespace

std::string EmailAddress(const std::string& text) {
  size_t open = text.rfind('<');
  size_t close = text.rfind('>');
  if (open != std::string::npos && close != std::string::npos && close > open) {
    return text.substr(open + 1, close - open - 1);
  }
  size_t b = text.find_first_not_of(" \t");
  size_t e = text.find_last_not_of(" \t");
  return b == std::string::npos ? "" : text.substr(b, e - b + 1);
}

std::string EmailMessage(const Notification& n, const EmailOptions& options, double now,
                         const std::string& message_id) {
  std::string to;
  for (const std::string& t : options.to) to += (to.empty() ? "" : ", ") + OneLine(t);
  std::string msg;
  msg += "Date: " + RfcDate(now) + "\r\n";
  msg += "From: " + OneLine(options.from) + "\r\n";
  msg += "To: " + to + "\r\n";
  msg += "Subject: " + EncodeHeaderText(OneLine("[trainwatch] " + Headline(n))) + "\r\n";
  msg += "Message-ID: <" + OneLine(message_id) + ">\r\n";
  if (!n.idempotency_key.empty())
    msg += "X-Trainwatch-Idempotency-Key: " + OneLine(n.idempotency_key) + "\r\n";
  msg += "MIME-Version: 1.0\r\n";
  msg += "Content-Type: text/plain; charset=utf-8\r\n";
  msg += "Content-Transfer-Encoding: 8bit\r\n";
  msg += "\r\n";

  std::string body = Headline(n) + "\n\n" + n.message + "\n\n";
  body += "Status:    " + n.status + "\n";
  body += "Severity:  " + n.severity + "\n";
  body += "Project:   " + n.project + "\n";
  body += "Run:       " + n.run + "\n";
  body += "Kind:      " + n.kind + "\n";
  body += "Name:      " + n.name + "\n";
  if (n.kind != "run_report") {  // a run report is about the whole run
    body += "Metric:    " + (n.metric.empty() ? std::string("-") : n.metric) + "\n";
    body += "Step:      " + std::to_string(n.step) + "\n";
    body += "Value:     " + FormatNumber(n.value) + "\n";
  }
  body += "Time:      " + (std::isfinite(n.time) ? FormatRfc3339(n.time) : "unknown") + "\n";
  body += "Started:   " + FormatRfc3339(n.starts_at) + "\n";
  if (n.resolved()) body += "Ended:     " + FormatRfc3339(n.ends_at != 0 ? n.ends_at : now) + "\n";
  body += "Alert id:  " + n.alert_id + "\n";
  for (const auto& [k, v] : n.labels) body += "Label:     " + k + "=" + v + "\n";
  for (const auto& [k, v] : n.annotations) body += "Note:      " + k + ": " + v + "\n";
  if (!n.chart_url.empty()) body += "\nChart: " + n.chart_url + "\n";
  if (!n.report_url.empty()) body += "\nReport: " + n.report_url + "\n";
  AppendLines(&msg, body);
  return msg;
}

EmailNotifier::EmailNotifier(EmailOptions options, const Clock& clock)
    : options_(std::move(options)), clock_(clock) {}

Status EmailNotifier::Send(const Notification& n) {
  const double now = clock_.NowUnixSeconds();
  const std::string from = EmailAddress(options_.from);
  std::string message_id = "trainwatch." + n.alert_id + "." + n.status + "." +
                           std::to_string(static_cast<int64_t>(now * 1000)) + "." +
                           std::to_string(sent_.fetch_add(1)) + "@" + Domain(from);
  const std::string message = EmailMessage(n, options_, now, message_id);

  EnsureCurlInitialized();
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Status::Unavailable("email: curl_easy_init failed");
  char error[CURL_ERROR_SIZE] = {0};
  curl_slist* rcpt = nullptr;
  for (const std::string& t : options_.to) {
    rcpt = curl_slist_append(rcpt, ("<" + EmailAddress(t) + ">").c_str());
  }
  Upload upload{&message};
  const std::string mail_from = "<" + from + ">";
  curl_easy_setopt(curl, CURLOPT_URL, options_.smtp_url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout_seconds * 1000));
  curl_easy_setopt(curl, CURLOPT_MAIL_FROM, mail_from.c_str());
  curl_easy_setopt(curl, CURLOPT_MAIL_RCPT, rcpt);
  curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(curl, CURLOPT_READFUNCTION, ReadUpload);
  curl_easy_setopt(curl, CURLOPT_READDATA, &upload);
  curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(message.size()));
  curl_easy_setopt(curl, CURLOPT_USE_SSL,
                   static_cast<long>(options_.starttls ? CURLUSESSL_ALL : CURLUSESSL_NONE));
  if (!options_.username.empty()) {
    curl_easy_setopt(curl, CURLOPT_USERNAME, options_.username.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, options_.password.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  CURLcode rc = curl_easy_perform(curl);
  long reply = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply);
  curl_slist_free_all(rcpt);
  curl_easy_cleanup(curl);
  if (rc == CURLE_OK) return Status::Ok();

  std::string reason = "email via " + RedactUrl(options_.smtp_url) + ": " +
                       (error[0] != '\0' ? std::string(error) : curl_easy_strerror(rc));
  if (reply != 0) reason += " (SMTP " + std::to_string(reply) + ")";
  bool permanent = (reply >= 500 && reply < 600) || rc == CURLE_LOGIN_DENIED ||
                   rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_URL_MALFORMAT;
  return permanent ? Status::InvalidArgument(reason) : Status::Unavailable(reason);
}

}  // namespace trainwatch::notify
