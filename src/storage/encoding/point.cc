#include "storage/encoding/point.h"

#include <cmath>

namespace trainwatch::storage {

void Summary::Add(const Point& p) {
  if (count == 0) {
    first = p.value;
    first_step = p.step;
  }
  ++count;
  last = p.value;
  last_step = p.step;
  if (std::isnan(p.value)) {
    ++nan_count;
  } else {
    if (p.value < min) min = p.value;
    if (p.value > max) max = p.value;
    if (std::isfinite(p.value)) sum += p.value;
  }
  // A NaN time compares false both ways and leaves the bounds alone.
  if (p.time < min_time) min_time = p.time;
  if (p.time > max_time) max_time = p.time;
}

void Summary::Merge(const Summary& later) {
  if (later.count == 0) return;
  if (count == 0) {
    *this = later;
    return;
  }
  count += later.count;
  nan_count += later.nan_count;
  if (later.min < min) min = later.min;
  if (later.max > max) max = later.max;
  sum += later.sum;
  last = later.last;
  last_step = later.last_step;
  if (later.min_time < min_time) min_time = later.min_time;
  if (later.max_time > max_time) max_time = later.max_time;
}

}  // namespace trainwatch::storage
