// Finding TensorBoard runs in a log directory, as TensorBoard does: a run is a directory holding
// at least one file whose name contains "tfevents".
#pragma once

#include <string>
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

}  // namespace trainwatch::tools
