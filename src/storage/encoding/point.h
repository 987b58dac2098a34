// The values the store holds: scalar points and the summary every sealed chunk carries.
#pragma once

#include <cstdint>
#include <limits>

namespace trainwatch::storage {

// One scalar sample of one series. `value` keeps its exact bits (NaN payloads and ±Inf included).
struct Point {
  int64_t step = 0;
  double time = 0;  // unix seconds
  double value = 0;
};

// Aggregates over a run of points, as stored with every sealed chunk and as returned per bucket by
// downsampling. NaN values are counted in `nan_count` and take no part in min/max/sum; ±Inf take
// part in min and max but not in `sum` (`sum` is over finite values only). `first`/`last` are the
// values of the lowest and highest step, whatever they are (NaN included).
struct Summary {
  uint64_t count = 0;
  uint64_t nan_count = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double first = 0;
  double last = 0;
  double sum = 0;
  int64_t first_step = 0;
  int64_t last_step = 0;
  double min_time = std::numeric_limits<double>::infinity();
  double max_time = -std::numeric_limits<double>::infinity();

  // Adds one point that comes after every point already added (in step order).
  void Add(const Point& p);
  // Merges a summary of points that all come after this one's.
  void Merge(const Summary& later);
};

}  // namespace trainwatch::storage
