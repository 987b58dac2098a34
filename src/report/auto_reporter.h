// AutoReporter: stores a run's report when the run ends, for the projects the alerting file's
// `reports:` section names (alerting/report_policy.h, docs/reports.md "Automatic reports"), and
// tells the receivers with a `run_report` notification linking it.
//
// The server's commit listener hands it every committed write (OnCommit), which only looks for
// `finished` and `crashed` statuses and queues (project, run): no I/O, never waits, so ingest is
// never held up. Its own thread then, for each queued run: waits until the alert manager has
// processed what was committed so far (the run's alerts are resolved with it), reads the run
// again and goes on only when it has ended (a rank of a distributed run finishing leaves the run
// running until every rank has) with a status the policy wants, and when its stored report is not
// already about this very ending (the same status and end time); builds the HTML report
// (CollectReport, RenderReportHtml), stores it (ReportStore) and queues the notification.
//
// Thread-safety: OnCommit, SetPolicy and Flush may be called from any thread; Start and Stop from
// one.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "alerting/report_policy.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "common/mutex.h"
#include "notify/notification.h"
#include "report/report_store.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::alerting {
class AlertManager;
}
namespace trainwatch::query {
class Querier;
}

namespace trainwatch::report {

struct AutoReporterOptions {
  // Base of the links in notifications: <external_url>/api/v1/report/stored?project=..&run=..
  std::string external_url = "http://127.0.0.1:8080";
  std::string generator = "trainwatch";  // the reports' footer
};

// <external_url>/api/v1/report/stored?project=P&run=R: where a run's stored report is served.
std::string StoredReportUrl(const std::string& external_url, const std::string& project,
                            const std::string& run);

class AutoReporter {
 public:
  // Queues a notification (the outbox); an error is logged and counted.
  using NotifyFn = std::function<Status(const notify::Notification&)>;
  // Cluster mode: whether this node notifies for the run (it owns the run's partition).
  using OwnsFn = std::function<bool(const std::string& project, const std::string& run)>;

  // `querier`, `store`, `clock`, `logger` and `metrics` must outlive the reporter; `alerts` may be
  // null (reports without alerts).
  AutoReporter(AutoReporterOptions options, const query::Querier& querier,
               alerting::AlertManager* alerts, ReportStore& store, Clock& clock, Logger& logger,
               MetricsRegistry& metrics, alerting::ReportPolicy policy);
  ~AutoReporter();  // Stop()
  AutoReporter(const AutoReporter&) = delete;
  AutoReporter& operator=(const AutoReporter&) = delete;

  // Set before Start().
  void SetNotify(NotifyFn notify) { notify_ = std::move(notify); }
  void SetOwns(OwnsFn owns) { owns_ = std::move(owns); }
  void Start();
  // Makes the reports queued so far, then joins the thread; later OnCommit calls are ignored.
  void Stop() TW_EXCLUDES(mu_);

  // The alerting file was reloaded. Runs already queued are judged by the new policy.
  void SetPolicy(alerting::ReportPolicy policy) TW_EXCLUDES(mu_);
  // The engine's commit listener (after the alert manager's): queues the runs the write ended.
  void OnCommit(const v1::WriteRequest& request) TW_EXCLUDES(mu_);

 private:
  struct Ended {
    std::string project, run;
  };
  void Loop() TW_EXCLUDES(mu_);
  // Makes, stores and announces the report of one ended run, if it is due.
  void MakeReport(const Ended& ended, const alerting::ReportPolicy& policy);
  notify::Notification ToNotification(const StoredReportInfo& info) const;

  const AutoReporterOptions options_;
  const query::Querier& querier_;
  alerting::AlertManager* const alerts_;
  ReportStore& store_;
  Clock& clock_;
  Logger& logger_;
  NotifyFn notify_;
  OwnsFn owns_;
  Counter& stored_;
  Counter& failed_;

  Mutex mu_;
  std::condition_variable cv_;
  alerting::ReportPolicy policy_ TW_GUARDED_BY(mu_);
  std::deque<Ended> queue_ TW_GUARDED_BY(mu_);
  bool stop_ TW_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace trainwatch::report
