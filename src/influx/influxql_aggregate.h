// InfluxQL's aggregate and selector functions over a series' points in time order.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace trainwatch::influx {

struct TimedValue {
  int64_t time;  // unix nanoseconds
  double value;
};

inline const std::set<std::string> kAggregates = {"mean",   "median",     "min",   "max",
                                                  "first",  "last",       "sum",   "count",
                                                  "spread", "percentile", "stddev"};
// The functions that pick a point (and answer with its time when alone).
inline const std::set<std::string> kSelectors = {"min", "max", "first", "last", "percentile"};

// One output column: an aggregate (or nothing, for a raw field) of one field.
struct Column {
  std::string name;
  std::string field;
  std::string function;  // "" for the raw field
  double arg = 0;        // percentile's N
};

// The function over values in time order; nullopt for none. Selectors also set *at to the time
// of the point they chose. percentile is InfluxDB's nearest rank.
std::optional<double> Aggregate(const Column& c, const std::vector<TimedValue>& points,
                                int64_t* at);

}  // namespace trainwatch::influx
