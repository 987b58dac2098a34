// Export: every visible scalar point of a run, read a window of steps at a time so that memory
// stays at a window's worth however long the run.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "storage/series_key.h"

namespace trainwatch::query {

// What an export of one run reads: its scalar metrics that have points, and their joint steps.
struct ExportPlan {
  storage::RunKey run;
  std::vector<std::string> metrics;  // by name
  int64_t first_step = std::numeric_limits<int64_t>::max();
  int64_t last_step = std::numeric_limits<int64_t>::min();
  uint64_t points = 0;  // visible points of those metrics, all together
  // A distributed run: its lines carry "rank". ranks[m]: the ranks metric m has (ascending; {0}
  // for a run that is not distributed).
  bool distributed = false;
  std::vector<std::vector<uint32_t>> ranks;
};

// One point of a window: metric is an index into ExportPlan::metrics. A window's cells come by
// (rank, step, time), and in the plan's order of metrics within one (rank, step, time): one
// /api/v1/write line per run of equal (rank, step, time).
struct ExportCell {
  int64_t step;
  double time;
  uint32_t metric;
  double value;
  uint32_t rank = 0;
};

// Walks a plan's steps in windows sized to hold about kPointsPerWindow points (by the run's
// average density), from first_step to last_step, exact over the whole int64 range.
class ExportCursor {
 public:
  static constexpr double kPointsPerWindow = 65536;

  explicit ExportCursor(const ExportPlan& plan);

  // The next window's steps [*from, *to]; false once every step is covered (at once for a plan
  // without metrics).
  bool Next(int64_t* from, int64_t* to);
  // True once the window that reaches last_step has been handed out.
  bool done() const { return done_; }

 private:
  int64_t next_ = 0;
  int64_t last_ = 0;
  int64_t window_ = 1;
  bool done_ = false;
};

}  // namespace trainwatch::query
