// LocalQuerier: raw series pages, x ranges and downsampling.
#include <algorithm>
#include <cmath>
#include <limits>

#include "query/local_querier.h"
#include "storage/series_scan.h"

namespace trainwatch::query {
namespace {

// A step bound from a double: saturates at the int64 range (doubles beyond it, and ±Inf).
int64_t ClampToStep(double x) {
  if (!(x < 0x1p63)) return std::numeric_limits<int64_t>::max();
  if (x < -0x1p63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

// The steps of [from, to] on the step axis; every step on the time axes (their points are
// filtered by time after reading).
void StepRange(const SeriesSelection& selection, storage::SeriesReadOptions* options) {
  if (selection.axis != XAxis::kStep) return;
  if (selection.from > 0x1p63 || selection.to < -0x1p63) {  // no int64 step lies in the range
    options->from_step = 0;
    options->to_step = -1;
    return;
  }
  options->from_step = ClampToStep(std::ceil(selection.from));
  options->to_step = ClampToStep(std::floor(selection.to));
}

// Feeds what Engine::ScanSeries hands over to a Downsampler: summaries where they fit one
// bucket, points in step order on the step axis (block summaries fold long stretches), else one
// by one.
class DownsamplingScanner final : public storage::SeriesScanner {
 public:
  DownsamplingScanner(const BucketGrid& grid, XAxis axis, double origin)
      : sampler_(grid, axis, origin), step_axis_(axis == XAxis::kStep) {}

  bool TakeSummary(const Summary& summary) override { return sampler_.TryAddSummary(summary); }
  bool WantsChunk(const Summary& summary) const override { return sampler_.MayOverlap(summary); }
  void TakePoints(const Point* begin, const Point* end, const Point* base,
                  const BlockSummary* blocks) override {
    if (step_axis_) {
      sampler_.AddStepOrdered(begin, end, base, blocks);
      return;
    }
    for (const Point* p = begin; p != end; ++p) sampler_.AddPoint(*p);
  }
  std::vector<Bucket> Finish() const { return sampler_.Finish(); }

 private:
  Downsampler sampler_;
  const bool step_axis_;
};

}  // namespace

Result<double> LocalQuerier::OriginOf(const std::string& project, const std::string& run,
                                      XAxis axis) const {
  if (axis != XAxis::kRelativeTime) return 0.0;
  std::optional<storage::RunInfo> info = engine_.GetRun(project, run);
  if (!info) return Status::NotFound("no run '" + run + "' in project '" + project + "'");
  return info->start_time;
}

RawSeries LocalQuerier::ReadRawRun(const RawRequest& request, const std::string& run,
                                   size_t* budget) const {
  const SeriesSelection& selection = request.selection;
  RawSeries out;
  out.run = run;
  storage::SeriesReadOptions options;
  StepRange(selection, &options);
  // With the budget spent, one point is read to say where this series would start.
  options.max_points = std::max<size_t>(*budget, 1);
  std::optional<int64_t> next;
  Status s = engine_.ReadSeries({selection.project, run, request.metric, selection.rank}, options,
                                &out.points, &next);
  if (s.ok() && *budget == 0 && !out.points.empty()) {
    next = out.points.front().step;
    out.points.clear();
  }
  out.read = std::min(*budget, out.points.size());
  *budget -= out.read;
  if (!s.ok()) {
    out.status = s;
    out.points.clear();
    return out;
  }
  if (selection.axis != XAxis::kStep) {
    Result<double> origin = OriginOf(selection.project, run, selection.axis);
    const double shift = origin.ok() ? *origin : 0;
    std::erase_if(out.points, [&](const storage::Point& p) {
      double x = p.time - shift;
      return x < selection.from || x > selection.to;
    });
    out.truncated = next.has_value();
  } else {
    out.next_from = next;
  }
  return out;
}

std::vector<RawSeries> LocalQuerier::ReadRaw(const RawRequest& request) const {
  std::vector<RawSeries> out;
  out.reserve(request.selection.runs.size());
  size_t budget = request.limit;
  for (const std::string& run : request.selection.runs)
    out.push_back(ReadRawRun(request, run, &budget));
  return out;
}

Result<AxisRange> LocalQuerier::XRange(const SeriesSelection& selection,
                                       const std::string& metric) const {
  AxisRange range{std::numeric_limits<double>::infinity(),
                  -std::numeric_limits<double>::infinity()};
  bool any = false;
  for (const std::string& run : selection.runs) {
    storage::SeriesExtent extent;
    if (!engine_.ReadExtent({selection.project, run, metric, selection.rank}, &extent).ok())
      continue;
    double lo, hi;
    if (selection.axis == XAxis::kStep) {
      lo = static_cast<double>(extent.first_step);
      hi = static_cast<double>(extent.last_step);
    } else {
      Result<double> origin = OriginOf(selection.project, run, selection.axis);
      if (!origin.ok()) continue;  // deleted meanwhile
      lo = extent.min_time - *origin;
      hi = extent.max_time - *origin;
    }
    range.lo = std::min(range.lo, lo);
    range.hi = std::max(range.hi, hi);
    any = true;
  }
  if (!any) return Status::NotFound("no run has points of metric '" + metric + "'");
  return range;
}

DownsampledSeries LocalQuerier::DownsampleRun(const SeriesSelection& selection,
                                              const std::string& run, const std::string& metric,
                                              const BucketGrid& grid) const {
  DownsampledSeries out;
  out.run = run;
  // An unknown run has no series either: the scan's NotFound names the metric, as for any run.
  Result<double> origin = OriginOf(selection.project, run, selection.axis);
  DownsamplingScanner scanner(grid, selection.axis, origin.ok() ? *origin : 0);
  Status s = engine_.ScanSeries({selection.project, run, metric, selection.rank},
                                selection.axis == XAxis::kStep, scanner);
  if (s.ok() && !origin.ok()) s = Status::NotFound("run '" + run + "' was deleted");
  if (!s.ok()) {
    out.status = s;
    return out;
  }
  out.buckets = scanner.Finish();
  return out;
}

Result<std::vector<DownsampledMetric>> LocalQuerier::Downsample(
    const DownsampleRequest& request) const {
  const SeriesSelection& selection = request.selection;
  std::vector<DownsampledMetric> out;
  out.reserve(request.metrics.size());
  for (const std::string& metric : request.metrics) {
    std::optional<AxisRange> range;
    if (!std::isfinite(selection.from) || !std::isfinite(selection.to)) {
      if (Result<AxisRange> r = XRange(selection, metric); r.ok()) range = *r;
    }
    DownsampledMetric answer;
    answer.metric = metric;
    TW_ASSIGN_OR_RETURN(answer.grid, GridFor(selection, request.buckets, range));
    answer.series.reserve(selection.runs.size());
    for (const std::string& run : selection.runs) {
      answer.series.push_back(DownsampleRun(selection, run, metric, answer.grid));
    }
    out.push_back(std::move(answer));
  }
  return out;
}

}  // namespace trainwatch::query
