#include "import_logdir.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace trainwatch::tools {

namespace fs = std::filesystem;

std::string RunIdOf(const std::string& logdir, const std::string& dir) {
  const fs::path root = fs::path(logdir).lexically_normal();
  const fs::path rel = fs::path(dir).lexically_normal().lexically_relative(root);
  if (rel.empty() || rel == ".") {
    fs::path name = root.filename().empty() ? root.parent_path().filename() : root.filename();
    if (name.empty() || name == "." || name == "..")
      name = fs::absolute(root).lexically_normal().filename();
    if (name.empty()) name = fs::absolute(root).lexically_normal().parent_path().filename();
    return name.empty() ? std::string("run") : name.string();
  }
  return rel.generic_string();
}

Result<std::vector<LogdirRun>> FindRuns(const std::string& logdir) {
  std::error_code ec;
  if (!fs::is_directory(logdir, ec)) return Status::NotFound(logdir + " is not a directory");
  std::map<std::string, LogdirRun> runs;
  auto consider = [&](const fs::directory_entry& entry) {
    std::error_code e;
    if (!entry.is_regular_file(e)) return;
    const std::string name = entry.path().filename().string();
    if (name.find("tfevents") == std::string::npos) return;
    const std::string dir = entry.path().parent_path().string();
    const std::string id = RunIdOf(logdir, dir);
    LogdirRun& run = runs[id];
    run.id = id;
    run.dir = dir;
    run.files.push_back(name);
  };
  fs::recursive_directory_iterator it(logdir, fs::directory_options::skip_permission_denied, ec);
  if (ec) return Status::IoError("listing " + logdir + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;  // a directory vanished while listing (a run being deleted): take what was seen
    consider(*it);
  }
  std::vector<LogdirRun> out;
  for (auto& [id, run] : runs) {
    std::sort(run.files.begin(), run.files.end());
    out.push_back(std::move(run));
  }
  return out;
}

}  // namespace trainwatch::tools
