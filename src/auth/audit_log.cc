#include "auth/audit_log.h"

#include <algorithm>
#include <ctime>

#include <nlohmann/json.hpp>

#include "common/json.h"

namespace trainwatch::auth {
namespace {

constexpr std::string_view kSuffix = ".jsonl";

// "2026-12-01.jsonl" for a time on that UTC day.
std::string DayFile(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return std::string(buf) + std::string(kSuffix);
}

nlohmann::json ToJson(const AuditEntry& e) {
  nlohmann::json j = {{"time", e.time},     {"key", e.key},       {"remote", e.remote},
                      {"action", e.action}, {"target", e.target}, {"outcome", e.outcome}};
  if (!e.detail.empty()) j["detail"] = e.detail;
  return j;
}

bool FromJson(const nlohmann::json& j, AuditEntry* e) {
  if (!j.is_object()) return false;
  try {
    e->time = j.at("time").get<double>();
    e->key = j.at("key").get<std::string>();
    e->remote = j.at("remote").get<std::string>();
    e->action = j.at("action").get<std::string>();
    e->target = j.at("target").get<std::string>();
    e->outcome = j.at("outcome").get<int>();
    e->detail = j.value("detail", "");
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return true;
}

bool Matches(const AuditQuery& q, const AuditEntry& e) {
  return (q.key.empty() || e.key == q.key) && e.action.starts_with(q.action) &&
         (!q.failures_only || e.outcome >= 400) && (q.since <= 0 || e.time >= q.since) &&
         (q.until <= 0 || e.time <= q.until);
}

}  // namespace

AuditLog::AuditLog(FileSystem& fs, std::string dir, Clock& clock, Logger& logger,
                   double retention_seconds)
    : fs_(fs),
      dir_(std::move(dir)),
      clock_(clock),
      logger_(logger),
      retention_seconds_(retention_seconds) {}

Result<std::unique_ptr<AuditLog>> AuditLog::Open(FileSystem& fs, std::string dir, Clock& clock,
                                                 Logger& logger, double retention_seconds) {
  TW_RETURN_IF_ERROR(fs.CreateDirs(dir));
  std::unique_ptr<AuditLog> log(new AuditLog(fs, std::move(dir), clock, logger, retention_seconds));
  TW_RETURN_IF_ERROR(log->ApplyRetention());
  TW_RETURN_IF_ERROR(log->CutTornTail());
  log->thread_ = std::thread([raw = log.get()] { raw->Loop(); });
  return log;
}

AuditLog::~AuditLog() { Stop(); }

void AuditLog::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  MutexLock lock(write_mu_);
  if (day_file_) (void)day_file_->Close();
  day_file_.reset();
}

void AuditLog::Append(AuditEntry entry, std::function<void()> durable) {
  if (entry.time == 0) entry.time = clock_.NowUnixSeconds();
  {
    MutexLock lock(mu_);
    if (!stop_) {
      queue_.emplace_back(std::move(entry), std::move(durable));
      cv_.notify_one();
      return;
    }
  }
  Status s = AppendNow(std::move(entry));  // stopping: nothing is lost, the caller just waits
  if (!s.ok()) logger_.Error("audit log", {{"error", s.ToString()}});
  if (durable) durable();
}

Status AuditLog::AppendNow(AuditEntry entry) {
  if (entry.time == 0) entry.time = clock_.NowUnixSeconds();
  return Write({std::move(entry)});
}

Status AuditLog::Write(const std::vector<AuditEntry>& entries) {
  MutexLock lock(write_mu_);
  // Entries of one batch usually share a day; a batch across midnight goes to both files.
  std::string file, text;
  auto flush = [&]() TW_REQUIRES(write_mu_) -> Status {
    if (text.empty()) return Status::Ok();
    Status s = AppendToDay(file, text);
    if (!s.ok()) day_file_.reset();  // reopened by the next write
    text.clear();
    return s;
  };
  for (const AuditEntry& e : entries) {
    std::string day = DayFile(e.time);
    if (day != file) {
      TW_RETURN_IF_ERROR(flush());
      file = day;
    }
    text += ToJson(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return flush();
}

Status AuditLog::AppendToDay(const std::string& day, std::string_view text) {
  if (!day_file_ || day != day_name_) {
    if (day_file_) (void)day_file_->Close();  // the previous day is complete and synced
    day_file_.reset();
    const std::string path = dir_ + "/" + day;
    const bool created = !fs_.Exists(path);
    TW_ASSIGN_OR_RETURN(day_file_, fs_.OpenAppendable(path));
    if (created) TW_RETURN_IF_ERROR(fs_.SyncDir(dir_));
    day_name_ = day;
  }
  TW_RETURN_IF_ERROR(day_file_->Append(text));
  return day_file_->Sync();
}

void AuditLog::Loop() {
  MutexLock lock(mu_);
  for (;;) {
    cv_.wait(lock.native(), [&]() TW_REQUIRES(mu_) { return stop_ || !queue_.empty(); });
    if (queue_.empty() && stop_) return;
    std::deque<std::pair<AuditEntry, std::function<void()>>> batch;
    batch.swap(queue_);
    lock.Unlock();
    std::vector<AuditEntry> entries;
    entries.reserve(batch.size());
    for (auto& [entry, done] : batch) entries.push_back(entry);
    Status s = Write(entries);
    if (!s.ok())
      logger_.Error("audit log: entries not written",
                    {{"entries", entries.size()}, {"error", s.ToString()}});
    for (auto& [entry, done] : batch) {
      if (done) done();
    }
    lock.Lock();
  }
}

Result<std::vector<AuditEntry>> AuditLog::Read(const AuditQuery& query) const {
  TW_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_.ListDir(dir_));
  std::vector<AuditEntry> out;
  size_t skipped = 0;
  for (auto name = names.rbegin(); name != names.rend() && out.size() < query.limit; ++name) {
    if (!name->ends_with(kSuffix)) continue;
    TW_ASSIGN_OR_RETURN(std::string text, fs_.ReadFile(dir_ + "/" + *name));
    std::vector<AuditEntry> day;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos)
        break;  // a torn last line (a crash mid-append): never acknowledged
      AuditEntry e;
      if (FromJson(ParseJsonOrDiscarded(std::string_view(text).substr(start, end - start)), &e) &&
          Matches(query, e)) {
        day.push_back(std::move(e));
      }
      start = end + 1;
    }
    for (auto e = day.rbegin(); e != day.rend() && out.size() < query.limit; ++e) {
      if (skipped < query.offset) {
        ++skipped;
        continue;
      }
      out.push_back(std::move(*e));
    }
  }
  return out;
}

Status AuditLog::CutTornTail() {
  TW_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_.ListDir(dir_));
  auto newest = std::find_if(names.rbegin(), names.rend(),
                             [](const std::string& n) { return n.ends_with(kSuffix); });
  if (newest == names.rend()) return Status::Ok();
  const std::string path = dir_ + "/" + *newest;
  TW_ASSIGN_OR_RETURN(std::string text, fs_.ReadFile(path));
  if (text.empty() || text.back() == '\n') return Status::Ok();
  size_t keep = text.rfind('\n');
  return fs_.Truncate(path, keep == std::string::npos ? 0 : keep + 1);
}

Status AuditLog::ApplyRetention() {
  if (retention_seconds_ <= 0) return Status::Ok();
  const std::string oldest_kept = DayFile(clock_.NowUnixSeconds() - retention_seconds_);
  MutexLock lock(write_mu_);  // never the day being written
  TW_ASSIGN_OR_RETURN(std::vector<std::string> names, fs_.ListDir(dir_));
  for (const std::string& name : names) {
    if (name.ends_with(kSuffix) && name < oldest_kept && name != day_name_) {
      TW_RETURN_IF_ERROR(fs_.RemoveFile(dir_ + "/" + name));
    }
  }
  return Status::Ok();
}

}  // namespace trainwatch::auth
