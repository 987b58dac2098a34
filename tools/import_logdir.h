// Finding TensorBoard runs in a log directory, as TensorBoard does: a run is a directory holding
// at least one file whose name contains "tfevents".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trainwatch::tools {

struct LogdirRun {
  std::string id;   // the directory relative to the logdir; the logdir's own name for itself
  std::string dir;  // its path
  std::vector<std::string>
      files;  // event file names (not paths), sorted: writers name them by time
};

// Every run under `logdir` (recursively; symlinked directories are not followed), sorted by id.
// NotFound when `logdir` is not a directory. Directories that cannot be read are skipped.
Result<std::vector<LogdirRun>> FindRuns(const std::string& logdir);

// The run id of `dir` under `logdir` (both as given to FindRuns).
std::string RunIdOf(const std::string& logdir, const std::string& dir);

// One rank of a distributed run: the event-file directory one process of the job wrote.
struct LogdirRank {
  uint32_t rank = 0;
  std::string host;  // from its event files' names ("" when they do not say)
  LogdirRun dir;
};

// A run to import: a plain one (ranks empty), or a distributed one, whose rank directories (and
// its own event files, `run_level`, rows without a rank) are imported as ONE run with ranks.
struct ImportRun {
  std::string id;
  std::optional<LogdirRun> run_level;  // a plain run's directory; a distributed run's own files
  std::vector<LogdirRank> ranks;       // sorted by rank
  uint32_t world_size = 0;             // the highest rank + 1
};

// The rank a directory's name says it holds: the name (the last path component) is a rank word —
// rank, worker, replica, process, proc or gpu, any case — then an optional '_', '-' or '.', then
// the number: rank_0, rank-1, rank1, worker_2, GPU.3. nullopt for any other name.
std::optional<uint32_t> RankOfDirName(std::string_view name);

// The host in a TensorBoard event file's name, events.out.tfevents.<time>.<host>.<pid>[...]: the
// dot-separated fields after the time up to the first all-digit one ("" when there is none).
std::string HostOfEventFile(std::string_view file_name);

// Groups FindRuns' runs into what is imported. By name: the runs whose directory names a rank
// (RankOfDirName) and that share their parent become one distributed run, the parent's id (the
// logdir's name when the parent is the logdir); the parent's own event files join it as its
// run-level rows. `all_ranks` (the import's --ranks): every run of the logdir is a rank of one
// run named after the logdir, numbered by the ranks their names say when those are distinct, else
// 0.. in id order. InvalidArgument when two directories of one run name the same rank.
Result<std::vector<ImportRun>> PlanRuns(const std::string& logdir, std::vector<LogdirRun> runs,
                                        bool all_ranks);

}  // namespace trainwatch::tools
