#include "query/series_request.h"

#include <algorithm>

namespace trainwatch::query {

Result<BucketGrid> GridFor(const SeriesSelection& selection, uint32_t buckets,
                           const std::optional<AxisRange>& range) {
  BucketGrid grid;
  grid.count = buckets;
  if (std::isfinite(selection.from)) {
    grid.from = selection.from;
  } else {
    grid.from = range ? range->lo : 0;
  }
  if (std::isfinite(selection.to)) {
    grid.to = selection.to;
  } else {
    grid.to = range ? std::max(range->hi, grid.from) : grid.from;
  }
  if (!(grid.to >= grid.from)) return Status::InvalidArgument("to is below from");
  return grid;
}

}  // namespace trainwatch::query
