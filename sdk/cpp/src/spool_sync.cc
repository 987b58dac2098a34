#include "spool_sync.h"

#include <algorithm>

#include "client_core.h"
#include "common/file_system.h"

namespace trainwatch {
namespace sdk {
namespace {

bool HoldsSegments(FileSystem& fs, const std::string& dir) {
  auto names = fs.ListDir(dir);
  return names.ok() && std::any_of(names->begin(), names->end(),
                                   [](const std::string& n) { return n.ends_with(".seg"); });
}

// Delivers the writers under `dir` one after the other, counting into *report as it goes, so that
// an error leaves the counts of what was delivered before it.
Status Sync(const std::string& dir, const ClientOptions& options, double timeout_seconds,
            const std::function<void(const std::string&)>& progress, SyncReport* report) {
  FileSystem& fs = PosixFileSystem();
  std::vector<std::string> writers;
  if (HoldsSegments(fs, dir)) {
    writers.push_back(dir);
  } else {
    auto names = fs.ListDir(dir);
    if (!names.ok()) return names.status().WithContext("reading " + dir);
    for (const std::string& name : *names) {
      std::string sub = dir + "/" + name;
      if (HoldsSegments(fs, sub)) writers.push_back(sub);
    }
  }
  for (const std::string& writer : writers) {
    ++report->writers;
    TW_ASSIGN_OR_RETURN(std::shared_ptr<ClientCore> core, ClientCore::OpenSpool(options, writer));
    bool complete = core->Flush(timeout_seconds);
    ClientStats stats = core->Stats();
    core->Close();
    report->batches_acked += stats.batches_acked;
    report->batches_duplicate += stats.batches_duplicate;
    report->points_acked += stats.points_acked;
    if (complete) ++report->writers_complete;
    if (progress) {
      progress(writer + ": " + std::to_string(stats.batches_acked) + " batches (" +
               std::to_string(stats.points_acked) + " points) delivered, " +
               std::to_string(stats.batches_duplicate) + " already on the server" +
               (complete ? "" : "; INCOMPLETE: " + stats.last_error));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<SyncReport> SyncSpool(const std::string& dir, const ClientOptions& options,
                             double timeout_seconds,
                             const std::function<void(const std::string&)>& progress) {
  SyncReport report;
  TW_RETURN_IF_ERROR(Sync(dir, options, timeout_seconds, progress, &report));
  return report;
}

}  // namespace sdk

SpoolSyncReport SyncSpool(const std::string& dir, const ClientOptions& options,
                          double timeout_seconds,
                          const std::function<void(const std::string&)>& progress) {
  SpoolSyncReport report;
  if (Status s = sdk::Sync(dir, options, timeout_seconds, progress, &report); !s.ok())
    report.error = s.ToString();
  return report;
}

}  // namespace trainwatch
