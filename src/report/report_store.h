// ReportStore: the reports stored automatically when runs end (docs/reports.md, "Automatic
// reports"), as files under one directory (<data>/reports): for each run, `<key>.html` (the
// report) and `<key>.json` (what it is about), where <key> is the first 32 hex digits of SHA-256
// over project, 0x1f, run. Each file is written atomically and durably (WriteFileAtomic), the HTML
// first: a `.json` always describes a complete `.html`. A run has at most one stored report; a
// later one (the run resumed and ended again) replaces it.
//
// Thread-safety: Put, Remove and the reads may be called from any thread; a reader sees the old
// report or the new one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/file_system.h"
#include "common/mutex.h"
#include "common/status.h"

namespace trainwatch::report {

struct StoredReportInfo {
  std::string project, run;
  std::string status;       // the run's status when the report was made: finished, crashed
  double run_end_time = 0;  // the run's end_time then (unix seconds)
  double generated_at = 0;  // unix seconds, server clock
  uint64_t bytes = 0;       // of the HTML
};

class ReportStore {
 public:
  // `fs` must outlive the store. The directory is created by the first Put.
  ReportStore(FileSystem& fs, std::string dir);
  ReportStore(const ReportStore&) = delete;
  ReportStore& operator=(const ReportStore&) = delete;

  // Stores `html` as the report of info.project / info.run (info.bytes is set from it).
  Status Put(StoredReportInfo info, std::string_view html) TW_EXCLUDES(mu_);
  // NotFound "no stored report for run 'r' in project 'p'" when there is none.
  Result<StoredReportInfo> Info(const std::string& project, const std::string& run) const
      TW_EXCLUDES(mu_);
  Result<std::string> Html(const std::string& project, const std::string& run) const
      TW_EXCLUDES(mu_);
  // Removes the run's report; Ok when there was none.
  Status Remove(const std::string& project, const std::string& run) TW_EXCLUDES(mu_);

 private:
  std::string PathOf(const std::string& project, const std::string& run, const char* ext) const;

  FileSystem& fs_;
  const std::string dir_;
  mutable Mutex mu_;  // one writer of a run's files at a time; readers never see a torn pair
};

}  // namespace trainwatch::report
