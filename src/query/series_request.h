// What a series read asks for and what it answers: raw pages of points, and downsampled buckets on
// a grid shared by every run of a metric. Plain values: no HTTP, no JSON.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "query/downsample.h"
#include "storage/encoding/point.h"

namespace trainwatch::query {

// Which part of which runs' series: the same metric(s) of several runs of one project, within
// [from, to] on an axis (±infinity: open).
struct SeriesSelection {
  std::string project;
  std::vector<std::string> runs;
  XAxis axis = XAxis::kStep;
  double from = -INFINITY;
  double to = INFINITY;
  // Which rank's series of a distributed run (docs/distributed.md); 0: the run-level series (of a
  // run that is not distributed, or rank 0's).
  uint32_t rank = 0;
};

// Raw points of one metric of the selected runs.
struct RawRequest {
  SeriesSelection selection;
  std::string metric;
  // Points read in the whole answer: the runs take from it in order, each reading its points by
  // step; a run reached with none left reads none but still says where its points start.
  size_t limit = 0;
};

struct RawSeries {
  std::string run;
  Status status;  // not OK: the run or its metric is unknown, or unreadable; no points
  std::vector<storage::Point> points;  // by step; on the time axes only those within [from, to]
  // Cut short by the limit: on the step axis, the step the rest starts at (the next `from`);
  // on the time axes `truncated` (steps do not say where a time range resumes).
  std::optional<int64_t> next_from;
  bool truncated = false;
  // Points this run took from the limit (on the time axes some may lie outside [from, to]).
  size_t read = 0;
};

// The x range the selected runs' points of a metric span together.
struct AxisRange {
  double lo = 0;
  double hi = 0;
};

// Every listed metric of the selected runs, downsampled: one grid per metric (the selection's
// from/to where finite, else the runs' joint range), shared by all its runs.
struct DownsampleRequest {
  SeriesSelection selection;
  std::vector<std::string> metrics;
  uint32_t buckets = 1;
};

struct DownsampledSeries {
  std::string run;
  Status status;  // not OK: the run or its metric is unknown, or unreadable; no buckets
  std::vector<Bucket> buckets;  // the non-empty ones, by index
};

struct DownsampledMetric {
  std::string metric;
  BucketGrid grid;
  std::vector<DownsampledSeries> series;  // in the selection's order of runs
};

// The grid for one metric: the selection's from/to where finite, else the ends of `range` (the
// runs' joint x range; nullopt when none has a point, and then from 0). InvalidArgument
// "to is below from" when the grid would be empty.
Result<BucketGrid> GridFor(const SeriesSelection& selection, uint32_t buckets,
                           const std::optional<AxisRange>& range);

}  // namespace trainwatch::query
