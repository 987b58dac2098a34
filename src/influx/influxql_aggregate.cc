#include "influx/influxql_aggregate.h"

#include <algorithm>
#include <cmath>

namespace trainwatch::influx {

std::optional<double> Aggregate(const Column& c, const std::vector<TimedValue>& points,
                                int64_t* at) {
  if (points.empty()) return std::nullopt;
  const std::string& f = c.function;
  if (f == "count") return static_cast<double>(points.size());
  if (f == "first") {
    *at = points.front().time;
    return points.front().value;
  }
  if (f == "last") {
    *at = points.back().time;
    return points.back().value;
  }
  if (f == "min" || f == "max") {
    const TimedValue* best = &points.front();
    for (const TimedValue& p : points) {
      if (f == "min" ? p.value < best->value : p.value > best->value) best = &p;
    }
    *at = best->time;
    return best->value;
  }
  double sum = 0;
  for (const TimedValue& p : points) sum += p.value;
  if (f == "sum") return sum;
  if (f == "mean") return sum / static_cast<double>(points.size());
  if (f == "stddev") {
    if (points.size() < 2) return std::nullopt;
    const double mean = sum / static_cast<double>(points.size());
    double sq = 0;
    for (const TimedValue& p : points) sq += (p.value - mean) * (p.value - mean);
    return std::sqrt(sq / static_cast<double>(points.size() - 1));
  }
  std::vector<TimedValue> sorted = points;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const TimedValue& a, const TimedValue& b) { return a.value < b.value; });
  if (f == "spread") return sorted.back().value - sorted.front().value;
  if (f == "median") {
    const size_t n = sorted.size();
    return n % 2 ? sorted[n / 2].value : (sorted[n / 2 - 1].value + sorted[n / 2].value) / 2;
  }
  if (f == "percentile") {  // InfluxDB's nearest rank
    const int64_t i =
        static_cast<int64_t>(std::floor(static_cast<double>(sorted.size()) * c.arg / 100 + 0.5)) -
        1;
    if (i < 0 || i >= static_cast<int64_t>(sorted.size())) return std::nullopt;
    *at = sorted[static_cast<size_t>(i)].time;
    return sorted[static_cast<size_t>(i)].value;
  }
  return std::nullopt;
}

}  // namespace trainwatch::influx
