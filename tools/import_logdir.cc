#include "import_logdir.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>

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

std::optional<uint32_t> RankOfDirName(std::string_view name) {
  static constexpr std::string_view kWords[] = {"process", "replica", "worker",
                                                "rank",    "proc",    "gpu"};
  auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  for (std::string_view word : kWords) {
    if (name.size() <= word.size()) continue;
    bool same = true;
    for (size_t i = 0; i < word.size() && same; ++i) same = lower(name[i]) == word[i];
    if (!same) continue;
    std::string_view rest = name.substr(word.size());
    if (rest.front() == '_' || rest.front() == '-' || rest.front() == '.') rest.remove_prefix(1);
    if (rest.empty() || rest.size() > 9) return std::nullopt;
    if (!std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    uint32_t rank = 0;
    std::from_chars(rest.data(), rest.data() + rest.size(), rank);
    return rank;
  }
  return std::nullopt;
}

std::string HostOfEventFile(std::string_view file_name) {
  constexpr std::string_view kPrefix = "events.out.tfevents.";
  const size_t at = file_name.find(kPrefix);
  if (at == std::string_view::npos) return "";
  std::string_view rest = file_name.substr(at + kPrefix.size());
  auto all_digits = [](std::string_view f) {
    return !f.empty() &&
           std::all_of(f.begin(), f.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  // The time.
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || !all_digits(rest.substr(0, dot))) return "";
  rest.remove_prefix(dot + 1);
  std::string host;
  while (!rest.empty()) {
    const size_t next = rest.find('.');
    std::string_view field = rest.substr(0, next);
    if (all_digits(field)) return host;  // the pid
    if (!host.empty()) host += '.';
    host += field;
    if (next == std::string_view::npos) break;
    rest.remove_prefix(next + 1);
  }
  return "";  // no pid after it: not the name TensorBoard's writers give
}

namespace {

std::string ParentId(const std::string& logdir, const LogdirRun& run) {
  const fs::path dir = fs::path(run.dir).lexically_normal();
  return RunIdOf(logdir, dir.parent_path().string());
}

Status AddRank(ImportRun& run, uint32_t rank, LogdirRun dir) {
  for (const LogdirRank& r : run.ranks) {
    if (r.rank == rank) {
      return Status::InvalidArgument("run '" + run.id + "': '" + r.dir.id + "' and '" + dir.id +
                                     "' both hold rank " + std::to_string(rank));
    }
  }
  LogdirRank r;
  r.rank = rank;
  for (const std::string& f : dir.files) {
    r.host = HostOfEventFile(f);
    if (!r.host.empty()) break;
  }
  r.dir = std::move(dir);
  run.ranks.push_back(std::move(r));
  run.world_size = std::max(run.world_size, rank + 1);
  return Status::Ok();
}

}  // namespace

Result<std::vector<ImportRun>> PlanRuns(const std::string& logdir, std::vector<LogdirRun> runs,
                                        bool all_ranks) {
  std::map<std::string, ImportRun> planned;
  if (all_ranks) {
    // Every directory is a rank of the logdir's run: numbered by name when the names say
    // distinct ranks, else in id order.
    const std::string id = RunIdOf(logdir, logdir);
    std::set<uint32_t> named;
    for (const LogdirRun& r : runs) {
      std::optional<uint32_t> rank =
          RankOfDirName(fs::path(r.dir).lexically_normal().filename().string());
      if (rank) named.insert(*rank);
    }
    const bool by_name = named.size() == runs.size();
    ImportRun& run = planned[id];
    run.id = id;
    uint32_t next = 0;
    for (LogdirRun& r : runs) {
      const uint32_t rank =
          by_name ? *RankOfDirName(fs::path(r.dir).lexically_normal().filename().string()) : next++;
      TW_RETURN_IF_ERROR(AddRank(run, rank, std::move(r)));
    }
  } else {
    std::vector<LogdirRun> plain;
    for (LogdirRun& r : runs) {
      const bool is_logdir =
          r.id == RunIdOf(logdir, logdir) &&
          fs::path(r.dir).lexically_normal() == fs::path(logdir).lexically_normal();
      std::optional<uint32_t> rank;
      if (!is_logdir) rank = RankOfDirName(fs::path(r.dir).lexically_normal().filename().string());
      if (!rank) {
        plain.push_back(std::move(r));
        continue;
      }
      const std::string id = ParentId(logdir, r);
      ImportRun& run = planned[id];
      run.id = id;
      TW_RETURN_IF_ERROR(AddRank(run, *rank, std::move(r)));
    }
    for (LogdirRun& r : plain) {
      ImportRun& run = planned[r.id];  // a distributed run's own files: its run-level rows
      run.id = r.id;
      run.run_level = std::move(r);
    }
  }
  std::vector<ImportRun> out;
  for (auto& [id, run] : planned) {
    std::sort(run.ranks.begin(), run.ranks.end(),
              [](const LogdirRank& a, const LogdirRank& b) { return a.rank < b.rank; });
    out.push_back(std::move(run));
  }
  return out;
}

}  // namespace trainwatch::tools
