#include "query/downsample.h"

#include <algorithm>
#include <cmath>

namespace trainwatch::query {

int64_t BucketGrid::IndexOf(double x) const {
  if (!(x >= from && x <= to)) return -1;  // also rejects NaN
  if (to <= from) return 0;
  auto i = static_cast<int64_t>((x - from) / Width());  // Width() is exact and the same every call
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

void Bucket::AddOrderedRun(const Point* begin, const Point* end, const Point* base,
                           const BlockSummary* blocks) {
  if (begin == end) return;
  const bool empty = count == 0;
  double lo = min, hi = max, total = 0;
  uint64_t nans = 0;
  size_t i = begin - base, j = end - base;  // meaningful only with blocks
  size_t first_full = (i + storage::kBlockPoints - 1) / storage::kBlockPoints;
  size_t last_full = j / storage::kBlockPoints;
  if (blocks != nullptr && first_full < last_full) {
    storage::ScanValues(begin, base + first_full * storage::kBlockPoints, &lo, &hi, &total, &nans);
    for (size_t b = first_full; b < last_full; ++b) {
      lo = blocks[b].min < lo ? blocks[b].min : lo;
      hi = blocks[b].max > hi ? blocks[b].max : hi;
      total += blocks[b].sum;
      nans += blocks[b].nan_count;
    }
    storage::ScanValues(base + last_full * storage::kBlockPoints, end, &lo, &hi, &total, &nans);
  } else {
    storage::ScanValues(begin, end, &lo, &hi, &total, &nans);
  }
  count += end - begin;
  nan_count += nans;
  min = lo;
  max = hi;
  sum += total;
  if (empty || begin->step < first_step) {
    first_step = begin->step;
    first = begin->value;
    first_time = begin->time;
  }
  const Point& back = *(end - 1);
  if (empty || back.step > last_step) {
    last_step = back.step;
    last = back.value;
    last_time = back.time;
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

void Bucket::Merge(const Bucket& other) {
  if (other.count == 0) return;
  const bool empty = count == 0;
  count += other.count;
  nan_count += other.nan_count;
  min = std::min(min, other.min);
  max = std::max(max, other.max);
  sum += other.sum;
  if (empty || other.first_step < first_step) {
    first_step = other.first_step;
    first = other.first;
    first_time = other.first_time;
  }
  if (empty || other.last_step > last_step) {
    last_step = other.last_step;
    last = other.last;
    last_time = other.last_time;
  }
}

void Downsampler::AddPoint(const Point& p) {
  int64_t i = grid_.IndexOf(XOf(p));
  if (i >= 0) buckets_[i].AddPoint(p);
}

void Downsampler::AddStepOrdered(const Point* begin, const Point* end, const Point* base,
                                 const BlockSummary* blocks) {
  const Point* p = begin;
  while (p != end) {
    double x = static_cast<double>(p->step);
    int64_t b = grid_.IndexOf(x);
    if (b < 0) {
      if (x > grid_.to) return;  // sorted: the rest is beyond the grid too
      ++p;
      continue;
    }
    // Every x below `safe` is surely in bucket b: the boundary less a margin far wider than the
    // rounding of IndexOf's arithmetic. Points in the margin take the exact path above.
    double boundary = b + 1 == grid_.count ? grid_.to : grid_.from + (b + 1) * width_;
    double safe = boundary - 1e-9 * (std::abs(boundary) + width_);
    if (b + 1 == grid_.count) safe = grid_.to;  // the last bucket holds x == to
    Bucket& bucket = buckets_[b];
    const Point* run = p;
    if (b + 1 == grid_.count) {
      while (p != end && static_cast<double>(p->step) <= grid_.to) ++p;
      bucket.AddOrderedRun(run, p, base, blocks);
      return;
    }
    // The first point at or past `safe`, by binary search: steps are increasing.
    p = std::partition_point(p + 1, end,
                             [safe](const Point& q) { return static_cast<double>(q.step) < safe; });
    bucket.AddOrderedRun(run, p, base, blocks);
  }
}

void Downsampler::XRangeOf(const Summary& s, double* lo, double* hi) const {
  switch (axis_) {
    case XAxis::kStep:
      *lo = static_cast<double>(s.first_step);
      *hi = static_cast<double>(s.last_step);
      return;
    case XAxis::kWallTime:
      *lo = s.min_time;
      *hi = s.max_time;
      return;
    case XAxis::kRelativeTime:
      *lo = s.min_time - time_origin_;
      *hi = s.max_time - time_origin_;
      return;
  }
}

bool Downsampler::TryAddSummary(const Summary& s) {
  double lo = 0, hi = 0;
  XRangeOf(s, &lo, &hi);
  int64_t a = grid_.IndexOf(lo), b = grid_.IndexOf(hi);
  if (a < 0 || a != b) return false;
  buckets_[a].AddSummary(s);
  return true;
}

bool Downsampler::MayOverlap(const Summary& s) const {
  double lo = 0, hi = 0;
  XRangeOf(s, &lo, &hi);
  return !(hi < grid_.from || lo > grid_.to);
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

}  // namespace trainwatch::query
