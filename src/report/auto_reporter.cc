#include "report/auto_reporter.h"

#include <algorithm>
#include <cmath>

#include "alerting/alert_manager.h"
#include "common/strings.h"
#include "query/querier.h"
#include "report/report.h"
#include "report/report_html.h"

namespace trainwatch::report {
namespace {

bool Ends(const std::string& status) { return status == "finished" || status == "crashed"; }

}  // namespace

AutoReporter::AutoReporter(AutoReporterOptions options, const query::Querier& querier,
                           alerting::AlertManager* alerts, ReportStore& store, Clock& clock,
                           Logger& logger, MetricsRegistry& metrics, alerting::ReportPolicy policy)
    : options_(std::move(options)),
      querier_(querier),
      alerts_(alerts),
      store_(store),
      clock_(clock),
      logger_(logger),
      stored_(metrics.AddCounter("trainwatch_reports_stored_total",
                                 "Reports stored automatically when a run ended.")),
      failed_(metrics.AddCounter("trainwatch_reports_failed_total",
                                 "Automatic reports that could not be made or stored.")),
      policy_(std::move(policy)) {}

AutoReporter::~AutoReporter() { Stop(); }

void AutoReporter::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void AutoReporter::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AutoReporter::SetPolicy(alerting::ReportPolicy policy) {
  MutexLock lock(mu_);
  policy_ = std::move(policy);
}

void AutoReporter::OnCommit(const v1::WriteRequest& request) {
  bool queued = false;
  {
    MutexLock lock(mu_);
    if (stop_ || policy_.empty()) return;
    for (const v1::RunBatch& batch : request.runs()) {
      if (!batch.has_metadata() || !batch.metadata().has_status()) continue;
      const std::string& status = batch.metadata().status();
      if (!Ends(status) || !policy_.Wants(batch.project(), status)) continue;
      const bool known = std::any_of(queue_.begin(), queue_.end(), [&](const Ended& e) {
        return e.project == batch.project() && e.run == batch.run();
      });
      if (known) continue;  // every rank of a distributed run finishing: one report
      queue_.push_back(Ended{batch.project(), batch.run()});
      queued = true;
    }
  }
  if (queued) cv_.notify_one();
}

void AutoReporter::Loop() {
  MutexLock lock(mu_);
  for (;;) {
    cv_.wait(lock.native(), [&]() TW_REQUIRES(mu_) { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and every queued report is made
    Ended ended = std::move(queue_.front());
    queue_.pop_front();
    const alerting::ReportPolicy policy = policy_;
    lock.Unlock();
    MakeReport(ended, policy);
    lock.Lock();
  }
}

void AutoReporter::MakeReport(const Ended& ended, const alerting::ReportPolicy& policy) {
  // The alerts the run's end resolved are resolved in the report too.
  if (alerts_ != nullptr) alerts_->Flush();
  Result<storage::RunInfo> run = querier_.GetRun({ended.project, ended.run});
  if (!run.ok()) return;  // deleted since
  const std::string status(storage::RunStatusName(run->status));
  // A rank finished while others go on, or the run is running again (a late heartbeat).
  if (!Ends(status) || !policy.Wants(ended.project, status)) return;
  if (Result<StoredReportInfo> stored = store_.Info(ended.project, ended.run);
      stored.ok() && stored->status == status && stored->run_end_time == run->end_time) {
    return;  // this ending has its report already
  }
  ReportRequest request;
  request.project = ended.project;
  request.run = ended.run;
  request.now = clock_.NowUnixSeconds();
  request.generator = options_.generator;
  Result<Report> collected = CollectReport(querier_, alerts_, request);
  if (!collected.ok()) {
    failed_.Add();
    logger_.Error(
        "automatic report",
        {{"project", ended.project}, {"run", ended.run}, {"error", collected.status().ToString()}});
    return;
  }
  StoredReportInfo info;
  info.project = ended.project;
  info.run = ended.run;
  info.status = status;
  info.run_end_time = run->end_time;
  info.generated_at = clock_.NowUnixSeconds();
  const std::string html = RenderReportHtml(*collected);
  if (Status s = store_.Put(info, html); !s.ok()) {
    failed_.Add();
    logger_.Error("storing an automatic report",
                  {{"project", ended.project}, {"run", ended.run}, {"error", s.ToString()}});
    return;
  }
  info.bytes = html.size();
  stored_.Add();
  logger_.Info("report stored", {{"project", ended.project},
                                 {"run", ended.run},
                                 {"status", status},
                                 {"bytes", static_cast<uint64_t>(html.size())}});
  if (!notify_ || (owns_ && !owns_(ended.project, ended.run))) return;
  if (Status s = notify_(ToNotification(info)); !s.ok()) {
    logger_.Error("queueing the report notification",
                  {{"project", ended.project}, {"run", ended.run}, {"error", s.ToString()}});
  }
}

std::string StoredReportUrl(const std::string& external_url, const std::string& project,
                            const std::string& run) {
  return external_url + "/api/v1/report/stored?project=" + UrlEncode(project) +
         "&run=" + UrlEncode(run);
}

notify::Notification AutoReporter::ToNotification(const StoredReportInfo& info) const {
  notify::Notification n;
  // One incident per ending of the run: the same key from every node of a cluster.
  const std::string incident = notify::IncidentId(
      info.project + '\x1f' + info.run + '\x1f' + "run_report" + '\x1f' + info.status,
      static_cast<int64_t>(std::llround(info.run_end_time * 1000)));
  n.alert_id = "report-" + incident;
  n.status = "firing";
  n.project = info.project;
  n.run = info.run;
  n.kind = "run_report";
  n.name = "run_report";
  n.severity = info.status == "crashed" ? "warning" : "info";
  n.report_url = StoredReportUrl(options_.external_url, info.project, info.run);
  n.message = "run " + info.status + "; report: " + n.report_url;
  n.value = NAN;
  n.time = info.run_end_time > 0 ? info.run_end_time : NAN;
  n.starts_at = info.generated_at;
  n.labels["run_status"] = info.status;
  n.chart_url =
      options_.external_url + "/#/runs/" + UrlEncode(info.project) + "/" + UrlEncode(info.run);
  n.idempotency_key = notify::IdempotencyKey(incident, n.status);
  return n;
}

}  // namespace trainwatch::report
