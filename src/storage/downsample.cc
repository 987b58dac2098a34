#include "storage/downsample.h"

#include <cmath>

namespace trainwatch::storage {

int64_t BucketGrid::IndexOf(double x) const {
  if (!(x >= from && x <= to)) return -1;  // also rejects NaN
  if (to <= from) return 0;
  auto i = static_cast<int64_t>((x - from) / Width());
  return std::min<int64_t>(i, count - 1);
}

void Bucket::AddPoint(const Point& p) {
  const bool empty = count == 0;
  ++count;
  if (std::isnan(p.value)) {
    ++nan_count;
  } else {
    min = std::min(min, p.value);
    max = std::max(max, p.value);
    if (std::isfinite(p.value)) sum += p.value;
  }
  if (empty || p.step < first_step) {
    first_step = p.step;
    first = p.value;
    first_time = p.time;
  }
  if (empty || p.step > last_step) {
    last_step = p.step;
    last = p.value;
    last_time = p.time;
  }
}

void Bucket::AddSummary(const Summary& s) {
  if (s.count == 0) return;
  const bool empty = count == 0;
  count += s.count;
  nan_count += s.nan_count;
  min = std::min(min, s.min);
  max = std::max(max, s.max);
  sum += s.sum;
  if (empty || s.first_step < first_step) {
    first_step = s.first_step;
    first = s.first;
    first_time = s.min_time;
  }
  if (empty || s.last_step > last_step) {
    last_step = s.last_step;
    last = s.last;
    last_time = s.max_time;
  }
}

void Downsampler::AddPoint(const Point& p) {
  int64_t i = grid_.IndexOf(XOf(p));
  if (i >= 0) buckets_[i].AddPoint(p);
}

bool Downsampler::TryAddSummary(const Summary& s) {
  double lo, hi;
  switch (axis_) {
    case XAxis::kStep:
      lo = static_cast<double>(s.first_step);
      hi = static_cast<double>(s.last_step);
      break;
    case XAxis::kWallTime:
      lo = s.min_time;
      hi = s.max_time;
      break;
    case XAxis::kRelativeTime:
      lo = s.min_time - time_origin_;
      hi = s.max_time - time_origin_;
      break;
  }
  int64_t a = grid_.IndexOf(lo), b = grid_.IndexOf(hi);
  if (a < 0 || a != b) return false;
  buckets_[a].AddSummary(s);
  return true;
}

std::vector<Bucket> Downsampler::Finish() const {
  std::vector<Bucket> out;
  for (uint32_t i = 0; i < buckets_.size(); ++i) {
    if (buckets_[i].count == 0) continue;
    out.push_back(buckets_[i]);
    out.back().index = i;
  }
  return out;
}

}  // namespace trainwatch::storage
