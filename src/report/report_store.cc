#include "report/report_store.h"

#include <nlohmann/json.hpp>

#include "common/json.h"
#include "common/sha256.h"
#include "common/strings.h"

namespace trainwatch::report {
namespace {

Status NoReport(const std::string& project, const std::string& run) {
  return Status::NotFound("no stored report for run '" + run + "' in project '" + project + "'");
}

}  // namespace

ReportStore::ReportStore(FileSystem& fs, std::string dir) : fs_(fs), dir_(std::move(dir)) {}

std::string ReportStore::PathOf(const std::string& project, const std::string& run,
                                const char* ext) const {
  const std::string key = LowerHex(Sha256(project + '\x1f' + run)).substr(0, 32);
  return dir_ + "/" + key + ext;
}

Status ReportStore::Put(StoredReportInfo info, std::string_view html) {
  info.bytes = html.size();
  nlohmann::json meta = {{"project", info.project},
                         {"run", info.run},
                         {"status", info.status},
                         {"run_end_time", info.run_end_time},
                         {"generated_at", info.generated_at},
                         {"bytes", info.bytes}};
  MutexLock lock(mu_);
  TW_RETURN_IF_ERROR(fs_.CreateDirs(dir_).WithContext("creating " + dir_));
  TW_RETURN_IF_ERROR(
      WriteFileAtomic(fs_, PathOf(info.project, info.run, ".html"), html).WithContext("report"));
  return WriteFileAtomic(fs_, PathOf(info.project, info.run, ".json"), meta.dump())
      .WithContext("report description");
}

Result<StoredReportInfo> ReportStore::Info(const std::string& project,
                                           const std::string& run) const {
  const std::string path = PathOf(project, run, ".json");
  std::string text;
  {
    MutexLock lock(mu_);
    if (!fs_.Exists(path)) return NoReport(project, run);
    TW_ASSIGN_OR_RETURN(text, fs_.ReadFile(path));
  }
  TW_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(text));
  StoredReportInfo info;
  try {
    info.project = j.at("project").get<std::string>();
    info.run = j.at("run").get<std::string>();
    info.status = j.at("status").get<std::string>();
    info.run_end_time = j.at("run_end_time").get<double>();
    info.generated_at = j.at("generated_at").get<double>();
    info.bytes = j.at("bytes").get<uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(path + ": " + e.what());
  }
  // A different run whose key collides (2^-128): not ours.
  if (info.project != project || info.run != run) return NoReport(project, run);
  return info;
}

Result<std::string> ReportStore::Html(const std::string& project, const std::string& run) const {
  TW_RETURN_IF_ERROR(Info(project, run).status());
  MutexLock lock(mu_);
  return fs_.ReadFile(PathOf(project, run, ".html"));
}

Status ReportStore::Remove(const std::string& project, const std::string& run) {
  MutexLock lock(mu_);
  for (const char* ext : {".json", ".html"}) {
    const std::string path = PathOf(project, run, ext);
    if (fs_.Exists(path)) TW_RETURN_IF_ERROR(fs_.RemoveFile(path));
  }
  return Status::Ok();
}

}  // namespace trainwatch::report
