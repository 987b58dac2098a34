#include "tfevents/histogram.h"

#include <cfloat>
#include <cmath>

#include "tfevents/wire_reader.h"

namespace trainwatch::tfevents {
namespace {

// An edge no chart can use: infinite, NaN, or the ±DBL_MAX that TensorFlow uses for "unbounded".
bool Open(double x) { return !std::isfinite(x) || std::fabs(x) >= DBL_MAX; }

std::string Num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

Status CheckCount(double c, size_t i) {
  if (!std::isfinite(c) || c < 0)
    return Status::InvalidArgument("bucket " + std::to_string(i) + " has count " + Num(c));
  return Status::Ok();
}

}  // namespace

Status ConvertV1Histogram(double min, double max, std::span<const double> limits,
                          std::span<const double> counts, Buckets* out, size_t max_buckets) {
  out->edges.clear();
  out->counts.clear();
  const size_t n = counts.size();
  if (limits.size() != n) {
    return Status::InvalidArgument("bucket_limit has " + std::to_string(limits.size()) +
                                   " entries and bucket " + std::to_string(n));
  }
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    TW_RETURN_IF_ERROR(CheckCount(counts[i], i));
    any = any || counts[i] > 0;
    if (i > 0 && !(limits[i] > limits[i - 1])) {
      return Status::InvalidArgument("bucket_limit is not strictly increasing at bucket_limit[" +
                                     std::to_string(i) + "]");
    }
  }
  if (!any) return Status::NotFound("empty histogram");
  auto lower = [&](size_t i) { return i == 0 ? -INFINITY : limits[i - 1]; };
  size_t first = 0;
  size_t last = n - 1;
  if (counts[first] == 0) ++first;  // bucket 0 is open below
  if (counts[last] == 0 && Open(limits[last])) --last;

  double lo = lower(first);
  if (std::isfinite(min) && lo <= min && min < limits[first]) lo = min;
  double hi = limits[last];
  const double last_lo = first == last ? lo : lower(last);
  if (std::isfinite(max) && last_lo < max && max <= hi) hi = max;
  if (Open(lo)) {
    return Status::InvalidArgument("the first non-empty bucket is unbounded below and min (" +
                                   Num(min) + ") does not lie in it");
  }
  if (Open(hi)) {
    return Status::InvalidArgument("the last non-empty bucket is unbounded above and max (" +
                                   Num(max) + ") does not lie in it");
  }
  if (last - first + 1 > max_buckets) {
    return Status::InvalidArgument(std::to_string(last - first + 1) + " buckets, at most " +
                                   std::to_string(max_buckets));
  }
  out->edges.push_back(lo);
  for (size_t i = first; i < last; ++i) out->edges.push_back(limits[i]);
  out->edges.push_back(hi);
  out->counts.assign(counts.begin() + first, counts.begin() + last + 1);
  return Status::Ok();
}

Status DecodeHistogramProto(std::string_view bytes, Buckets* out, size_t max_buckets) {
  double min = NAN;
  double max = NAN;
  std::vector<double> limits;
  std::vector<double> counts;
  WireReader r(bytes);
  while (r.Next()) {
    switch (r.field()) {
      case 1:
        r.ReadDouble(&min);
        break;
      case 2:
        r.ReadDouble(&max);
        break;
      case 6:
        r.AppendDoubles(&limits);
        break;
      case 7:
        r.AppendDoubles(&counts);
        break;
      default:
        r.Skip();  // num, sum, sum_squares: not needed for the buckets
    }
  }
  if (!r.ok()) return Status::InvalidArgument(std::string("histo: ") + r.error());
  return ConvertV1Histogram(min, max, limits, counts, out, max_buckets);
}

Status ConvertV2Histogram(std::span<const double> rows, Buckets* out, size_t max_buckets) {
  out->edges.clear();
  out->counts.clear();
  if (rows.size() % 3 != 0)
    return Status::InvalidArgument("histogram tensor is not of shape [k, 3]");
  struct Row {
    double left, right, count;
  };
  std::vector<Row> kept;
  for (size_t i = 0; i < rows.size() / 3; ++i) {
    Row b{rows[3 * i], rows[3 * i + 1], rows[3 * i + 2]};
    TW_RETURN_IF_ERROR(CheckCount(b.count, i));
    if (!std::isfinite(b.left) || !std::isfinite(b.right) || b.left > b.right) {
      return Status::InvalidArgument("bucket " + std::to_string(i) + " has edges [" + Num(b.left) +
                                     ", " + Num(b.right) + "]");
    }
    if (b.left == b.right && b.count == 0) continue;
    kept.push_back(b);
  }
  if (kept.empty()) return Status::NotFound("empty histogram");
  if (kept.size() == 1 && kept[0].left == kept[0].right) {
    out->edges = {kept[0].left - 0.5, kept[0].left + 0.5};
    out->counts = {kept[0].count};
    return Status::Ok();
  }
  out->edges.push_back(kept[0].left);
  for (size_t i = 0; i < kept.size(); ++i) {
    const Row& b = kept[i];
    if (b.left == b.right)
      return Status::InvalidArgument("a bucket of zero width at " + Num(b.left) + " among others");
    if (b.left < out->edges.back()) {
      return Status::InvalidArgument("buckets overlap at " + Num(b.left) +
                                     " (the previous one ends at " + Num(out->edges.back()) + ")");
    }
    if (b.left > out->edges.back()) {  // a gap: an empty bucket fills it
      out->edges.push_back(b.left);
      out->counts.push_back(0);
    }
    out->edges.push_back(b.right);
    out->counts.push_back(b.count);
  }
  if (out->counts.size() > max_buckets) {
    return Status::InvalidArgument(std::to_string(out->counts.size()) + " buckets, at most " +
                                   std::to_string(max_buckets));
  }
  return Status::Ok();
}

}  // namespace trainwatch::tfevents
