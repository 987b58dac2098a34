// The WHERE clause of an InfluxQL statement: its time bounds and its conditions on tags.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "influx/influx_catalog.h"
#include "influx/influxql_ast.h"

namespace trainwatch::influx {

inline constexpr int64_t kSecondNs = 1'000'000'000;
inline constexpr int64_t kMinTime = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kMaxTime = std::numeric_limits<int64_t>::max();

// "2024-01-01T00:00:00Z", with optional fraction and offset, or a date alone; unix nanoseconds.
std::optional<int64_t> ParseRfc3339(const std::string& text);

// The WHERE clause split into a time range (nanoseconds, inclusive) and the rest (on tags).
struct Conditions {
  int64_t from = kMinTime;
  int64_t to = kMaxTime;
  std::vector<const ql::Expr*> tags;  // point into the statement
};

// InvalidArgument for a time condition that is not ANDed with the rest, or a bad time operand.
// `now`: unix nanoseconds, for now().
Status SplitConditions(const ql::Expr* where, int64_t now, Conditions* out);

// Whether `s` satisfies a tag condition (a tag it lacks has the empty value, as in InfluxDB).
// InvalidArgument for a condition on a field value (not supported) or a bad regex.
Result<bool> Matches(const ql::Expr& condition, const FieldSeries& s);

}  // namespace trainwatch::influx
