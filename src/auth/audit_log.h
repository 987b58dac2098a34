// The audit log (docs/security.md): every state-changing request, key change and authentication
// failure, recorded durably before the request is answered — time, key name (never the key),
// client address, action, target, outcome. One JSON line per entry in <data>/audit/YYYY-MM-DD.jsonl
// (UTC days); days older than the retention are deleted. Appends from many threads share one
// fdatasync (group commit). Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include "common/mutex.h"

#include "common/clock.h"
#include "common/file_system.h"
#include "common/logging.h"
#include "common/status.h"

namespace trainwatch::auth {

struct AuditEntry {
  double time = 0;     // 0: stamped by the log's clock
  std::string key;     // the key's name; "" for a request without a valid key
  std::string remote;  // client address
  std::string action;  // "POST /api/v1/silences", "keys.create"
  std::string target;  // what it acted on: "project=p run=r", a key's name
  int outcome = 0;     // the HTTP status answered
  std::string detail;  // why it was refused, when it was
};

struct AuditQuery {
  std::string key;              // exact key name; "" any
  std::string action;           // prefix of the action; "" any
  bool failures_only = false;   // outcome >= 400
  double since = 0, until = 0;  // unix seconds; 0: unbounded
  size_t limit = 100;
  size_t offset = 0;  // entries to skip, newest first (paging)
};

// Where a data directory keeps its audit log.
inline std::string AuditDir(const std::string& data_dir) { return data_dir + "/audit"; }

class AuditLog {
 public:
  static Result<std::unique_ptr<AuditLog>> Open(FileSystem& fs, std::string dir, Clock& clock,
                                                Logger& logger, double retention_seconds);
  ~AuditLog();

  // Queues the entry; `durable` runs (on the log's thread) once it is on disk — or could not be
  // written, which is logged: the answer is not held back forever by a broken disk.
  void Append(AuditEntry entry, std::function<void()> durable);
  // Appends and syncs before returning (the CLI on a stopped data directory).
  Status AppendNow(AuditEntry entry);
  // Newest first.
  Result<std::vector<AuditEntry>> Read(const AuditQuery& query) const;
  // Deletes the days older than the retention.
  Status ApplyRetention();
  void Stop();

 private:
  AuditLog(FileSystem& fs, std::string dir, Clock& clock, Logger& logger, double retention_seconds);
  Status Write(const std::vector<AuditEntry>& entries);
  // A crash mid-append leaves a partial last line (never acknowledged): cut it, so that the next
  // entry starts a line of its own.
  Status CutTornTail();  // on the writer thread, or under write_mu_
  void Loop();

  FileSystem& fs_;
  const std::string dir_;
  Clock& clock_;
  Logger& logger_;
  const double retention_seconds_;
  // Appends and syncs `text` to the day's file, kept open between writes.
  Status AppendToDay(const std::string& day, std::string_view text) TW_REQUIRES(write_mu_);

  Mutex write_mu_;  // one writer at a time (the thread, AppendNow)
  std::unique_ptr<WritableFile> day_file_ TW_GUARDED_BY(write_mu_);
  std::string day_name_ TW_GUARDED_BY(write_mu_);
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<AuditEntry, std::function<void()>>> queue_ TW_GUARDED_BY(mu_);
  bool stop_ TW_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace trainwatch::auth
