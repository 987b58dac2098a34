// InfluxDB line protocol (1.x /write and 2.x /api/v2/write bodies), parsed without copying:
//
//   measurement[,tag=value...] field=value[,field=value...] [timestamp]
//
// Names and string values point into the body unless they held escapes, in which case they point
// into the result's own storage. Every line is either a point or one error with its number, in
// InfluxDB's words ("unable to parse '<line>': invalid number"), so that a batch with bad lines
// keeps its good ones (InfluxDB's "partial write"). docs/influx.md has the grammar.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace trainwatch::influx {

// The unit of the timestamps in a body (the `precision` parameter).
enum class Precision { kNanoseconds, kMicroseconds, kMilliseconds, kSeconds, kMinutes, kHours };

// "n"/"ns", "u"/"us"/"µ", "ms", "s", "m", "h"; "" is nanoseconds. InvalidArgument otherwise.
Result<Precision> ParsePrecision(std::string_view text);

struct FieldValue {
  enum class Type { kFloat, kInteger, kUnsigned, kBoolean, kString };
  Type type = Type::kFloat;
  double f = 0;        // kFloat
  int64_t i = 0;       // kInteger
  uint64_t u = 0;      // kUnsigned
  bool b = false;      // kBoolean
  std::string_view s;  // kString, unescaped
};

struct Point {
  std::string_view measurement;
  std::vector<std::pair<std::string_view, std::string_view>> tags;  // in line order
  std::vector<std::pair<std::string_view, FieldValue>> fields;      // a repeated key: the last one
  std::optional<int64_t> timestamp_ns;                              // absent: the caller's "now"
  uint32_t line = 0;  // 1-based line number in the body
};

struct LineError {
  uint32_t line = 0;
  std::string message;  // "unable to parse '<line>': <reason>"
};

struct ParsedBody {
  std::vector<Point> points;
  std::vector<LineError> errors;
  // Unescaped names and strings the points point into. A deque: growing it moves nothing.
  std::deque<std::string> storage;
};

// Parses `body`, which must outlive the result's string_views (so must the result itself, for
// unescaped text). Blank lines and comment lines ('#') are skipped.
ParsedBody ParseLineProtocol(std::string_view body, Precision precision);

}  // namespace trainwatch::influx
