#include "influx/influx_mirror.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/strings.h"
#include "influx/influx_catalog.h"

namespace trainwatch::influx {
namespace {

// Tag keys and values escape commas, spaces and equals signs (InfluxDB's line protocol).
void AppendEscaped(std::string_view s, std::string* out) {
  for (char c : s) {
    if (c == ',' || c == ' ' || c == '=' || c == '\\') out->push_back('\\');
    if (c == '\n' || c == '\r') c = ' ';
    out->push_back(c);
  }
}

size_t PointsOf(const v1::WriteRequest& request) {
  size_t n = 0;
  for (const v1::RunBatch& batch : request.runs()) {
    for (const v1::MetricColumn& column : batch.metrics()) n += column.values_size();
  }
  return n;
}

size_t KeepBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

size_t FormatLines(const v1::WriteRequest& request, std::string* out) {
  size_t lines = 0;
  for (const v1::RunBatch& batch : request.runs()) {
    const std::string project = batch.project().empty() ? "default" : batch.project();
    for (const v1::MetricColumn& column : batch.metrics()) {
      std::string base;
      std::map<std::string, std::string> tags;
      SplitMetric(column.name(), &base, &tags);
      tags["metric_name"] = base;
      tags["project"] = project;
      tags["run"] = batch.run();
      std::string series = kTrainingMeasurement;
      for (const auto& [key, value] : tags) {
        if (value.empty()) continue;  // InfluxDB has no empty tag values
        series.push_back(',');
        AppendEscaped(key, &series);
        series.push_back('=');
        AppendEscaped(value, &series);
      }
      // values[i] is row rows[i], or row i when `rows` is empty (a dense column).
      const bool dense = column.rows_size() == 0;
      const int n =
          dense ? column.values_size() : std::min(column.rows_size(), column.values_size());
      for (int i = 0; i < n; ++i) {
        const uint32_t row = dense ? static_cast<uint32_t>(i) : column.rows(i);
        const double value = column.values(i);
        if (!std::isfinite(value) || static_cast<int>(row) >= batch.steps_size()) continue;
        const double time = static_cast<int>(row) < batch.times_size() ? batch.times(row) : 0;
        char fields[128];
        std::snprintf(fields, sizeof fields, " step=%lldi,value=%.17g %lld\n",
                      static_cast<long long>(batch.steps(row)), value,
                      static_cast<long long>(std::llround(time * 1e6)));
        *out += series;
        *out += fields;
        ++lines;
      }
    }
  }
  return lines;
}

InfluxMirror::InfluxMirror(InfluxMirrorOptions options, std::shared_ptr<LineOutbox> outbox,
                           const Clock& clock, Logger& log, MetricsRegistry& metrics)
    : options_(std::move(options)),
      outbox_(std::move(outbox)),
      queued_gauge_(std::make_shared<std::atomic<uint64_t>>(0)),
      clock_(clock),
      log_(log),
      sent_(metrics.AddCounter("trainwatch_mirror_influx_points_sent_total",
                               "Points the InfluxDB mirror delivered (acknowledged with 204).")),
      dropped_(metrics.AddCounter(
          "trainwatch_mirror_influx_points_dropped_total",
          "Points never mirrored because the mirror's queue or outbox was full: it fell behind.")),
      refused_(metrics.AddCounter("trainwatch_mirror_influx_points_refused_total",
                                  "Points InfluxDB refused (HTTP 400), skipped.")),
      errors_(metrics.AddCounter("trainwatch_mirror_influx_send_errors_total",
                                 "Failed POSTs to InfluxDB, retried with backoff.")),
      posts_(metrics.AddCounter("trainwatch_mirror_influx_posts_total",
                                "Batches the InfluxDB mirror POSTed.")) {
  metrics.AddGauge("trainwatch_mirror_influx_backlog_bytes",
                   "Line protocol waiting in the mirror's outbox for InfluxDB.",
                   [outbox = outbox_] { return static_cast<double>(outbox->backlog_bytes()); });
  metrics.AddGauge("trainwatch_mirror_influx_queued_points",
                   "Points accepted and waiting in memory to enter the mirror's outbox.",
                   [queued = queued_gauge_] { return static_cast<double>(queued->load()); });
}

Result<std::unique_ptr<InfluxMirror>> InfluxMirror::Start(InfluxMirrorOptions options,
                                                          FileSystem& fs, const Clock& clock,
                                                          Logger& log, MetricsRegistry& metrics) {
  if (options.url.rfind("http://", 0) != 0 && options.url.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("--mirror-influx '" + options.url +
                                   "' must start with http:// or https://");
  }
  while (!options.url.empty() && options.url.back() == '/') options.url.pop_back();
  if (options.database.empty()) return Status::InvalidArgument("--mirror-influx-db is empty");
  LineOutboxOptions outbox_options;
  outbox_options.max_bytes = options.max_backlog_bytes;
  TW_ASSIGN_OR_RETURN(std::unique_ptr<LineOutbox> outbox,
                      LineOutbox::Open(fs, options.dir, outbox_options));
  std::unique_ptr<InfluxMirror> mirror(
      new InfluxMirror(std::move(options), std::move(outbox), clock, log, metrics));
  log.Info("mirroring points to InfluxDB", {{"url", mirror->options_.url},
                                            {"db", mirror->options_.database},
                                            {"backlog_bytes", mirror->outbox_->backlog_bytes()}});
  mirror->intake_ = std::thread([m = mirror.get()] { m->IntakeLoop(); });
  mirror->sender_ = std::thread([m = mirror.get()] { m->SendLoop(); });
  return mirror;
}

InfluxMirror::~InfluxMirror() { Stop(); }

void InfluxMirror::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  stopping_ = true;
  intake_cv_.notify_all();
  send_cv_.notify_all();
  if (intake_.joinable()) intake_.join();
  if (sender_.joinable()) sender_.join();
}

void InfluxMirror::Offer(const v1::WriteRequest& request) {
  const size_t points = PointsOf(request);
  if (points == 0) return;
  v1::WriteRequest copy;
  for (const v1::RunBatch& batch : request.runs()) {
    if (batch.metrics_size() == 0) continue;
    v1::RunBatch* b = copy.add_runs();
    b->set_project(batch.project());
    b->set_run(batch.run());
    *b->mutable_steps() = batch.steps();
    *b->mutable_times() = batch.times();
    *b->mutable_metrics() = batch.metrics();
  }
  {
    MutexLock lock(mu_);
    if (stop_) return;
    if (queued_points_ + points > options_.max_queued_points) {
      dropped_.Add(points);
      if (!dropping_) {
        log_.Error("InfluxDB mirror is behind: its queue is full, points are dropped",
                   {{"queued_points", queued_points_}});
      }
      dropping_ = true;
      return;
    }
    queued_points_ += points;
    queued_gauge_->store(queued_points_);
    queue_.push_back(std::move(copy));
  }
  intake_cv_.notify_one();
}

void InfluxMirror::IntakeLoop() {
  MutexLock lock(mu_);
  for (;;) {
    intake_cv_.wait(lock.native(), [&]() TW_REQUIRES(mu_) { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, everything written
    std::deque<v1::WriteRequest> taken;
    taken.swap(queue_);
    const size_t points = queued_points_;
    queued_points_ = 0;
    queued_gauge_->store(0);
    lock.Unlock();
    std::string lines;
    for (const v1::WriteRequest& request : taken) FormatLines(request, &lines);
    Status s = outbox_->Append(lines);
    lock.Lock();
    if (s.ok()) {
      dropping_ = false;
      appended_ = true;
      send_cv_.notify_one();
      continue;
    }
    dropped_.Add(points);
    if (!dropping_) {
      log_.Error("InfluxDB mirror is behind: points are dropped", {{"error", s.ToString()}});
    }
    dropping_ = true;
  }
}

void InfluxMirror::SendLoop() {
  double backoff = 0;
  bool created_database = false;
  MutexLock lock(mu_);
  for (;;) {
    clock_.WaitFor(lock.native(), send_cv_, backoff > 0 ? backoff : 1.0,
                   [&]() TW_REQUIRES(mu_) { return stop_ || (appended_ && backoff == 0); });
    if (stop_) return;
    appended_ = false;
    lock.Unlock();
    Status failure;
    while (!stopping_ && outbox_->backlog_bytes() > 0) {
      Result<LineOutbox::Chunk> chunk = outbox_->Peek(options_.batch_bytes);
      if (!chunk.ok()) {
        failure = chunk.status();
        break;
      }
      if (chunk->count == 0) break;
      Status s = Post(chunk->lines, &created_database);
      if (s.code() == StatusCode::kInvalidArgument) {
        refused_.Add(chunk->count);
        log_.Error("InfluxDB refused mirrored points; they are skipped", {{"error", s.ToString()}});
      } else if (!s.ok()) {
        failure = s;
        break;
      } else {
        sent_.Add(chunk->count);
      }
      if (Status a = outbox_->Ack(chunk->end); !a.ok()) {
        failure = a;
        break;
      }
    }
    lock.Lock();
    if (!failure.ok()) {
      errors_.Add();
      if (backoff == 0) {
        log_.Warn("InfluxDB mirror cannot deliver; retrying with backoff",
                  {{"error", failure.ToString()}, {"backlog_bytes", outbox_->backlog_bytes()}});
      }
      backoff = std::clamp(backoff * 2, options_.min_backoff_seconds, options_.max_backoff_seconds);
    } else {
      if (backoff > 0) log_.Info("InfluxDB mirror delivering again");
      backoff = 0;
    }
  }
}

Status InfluxMirror::CreateDatabase() {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return Status::Internal("curl_easy_init failed");
  const std::string body = "q=" + UrlEncode("CREATE DATABASE \"" + options_.database + "\"");
  const std::string url = options_.url + "/query";
  std::string reply;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout_seconds * 1000));
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, KeepBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply);
  if (!options_.username.empty()) {
    curl_easy_setopt(c, CURLOPT_USERNAME, options_.username.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, options_.password.c_str());
  }
  if (curl_easy_perform(c) != CURLE_OK) return Status::Unavailable("cannot reach " + url);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) {
    return Status::Unavailable("creating database " + options_.database + ": HTTP " +
                               std::to_string(status) + " " + reply.substr(0, 200));
  }
  log_.Info("InfluxDB mirror created its database", {{"db", options_.database}});
  return Status::Ok();
}

Status InfluxMirror::Post(const std::string& lines, bool* created_database) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return Status::Internal("curl_easy_init failed");
  const std::string url =
      options_.url + "/write?db=" + UrlEncode(options_.database) + "&precision=u";
  std::string reply;
  char error[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: text/plain; charset=utf-8");
  headers = curl_slist_append(headers, "Expect:");
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers,
                                                                          curl_slist_free_all);
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout_seconds * 1000));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, lines.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(lines.size()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, KeepBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  if (!options_.username.empty()) {
    curl_easy_setopt(c, CURLOPT_USERNAME, options_.username.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, options_.password.c_str());
  }
  posts_.Add();
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    return Status::Unavailable("cannot reach " + options_.url + ": " +
                               (error[0] ? error : curl_easy_strerror(rc)));
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status == 204 || status == 200) return Status::Ok();
  const std::string what =
      "InfluxDB /write: HTTP " + std::to_string(status) + " " + reply.substr(0, 300);
  if (status == 404 && reply.find("database not found") != std::string::npos &&
      !*created_database) {
    *created_database = true;  // once per process: then the 404 is retried as any error
    TW_RETURN_IF_ERROR(CreateDatabase());
    return Post(lines, created_database);
  }
  if (status == 400) return Status::InvalidArgument(what);
  if (status == 401 || status == 403) return Status::PermissionDenied(what);
  return Status::Unavailable(what);
}

}  // namespace trainwatch::influx
