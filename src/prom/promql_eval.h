// Evaluates PromQL (promql_ast.h) over trainwatch's series, with Prometheus's semantics for the
// subset (docs/prometheus.md): instant selectors look back 5 minutes, rate/increase/delta
// extrapolate as Prometheus does, aggregations drop the metric name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "prom/promql_ast.h"

namespace trainwatch::prom {

using Labels = std::map<std::string, std::string>;

struct SeriesPoints {
  Labels labels;
  std::vector<std::pair<int64_t, double>> points;  // unix milliseconds, ascending
};

// Where the evaluator's series come from: every series the matchers select, with its points in
// [from_ms, to_ms].
class SeriesSource {
 public:
  virtual ~SeriesSource() = default;
  virtual Result<std::vector<SeriesPoints>> Select(const std::vector<LabelMatcher>& matchers,
                                                   int64_t from_ms, int64_t to_ms) = 0;
};

struct Sample {
  Labels labels;
  double value = 0;
};

// The answer at one time: a scalar, or an instant vector.
struct InstantValue {
  bool is_scalar = false;
  double scalar = 0;
  std::vector<Sample> vector;
};

struct RangeSeries {
  Labels labels;
  std::vector<std::pair<int64_t, double>> points;
};

inline constexpr int64_t kLookbackMs = 5 * 60 * 1000;

// The expression at `time_ms`. InvalidArgument for what the subset does not evaluate (a
// function it lacks, a range vector where an instant vector must be, vectors that do not match
// one to one).
Result<InstantValue> EvalInstant(const Expr& e, int64_t time_ms, SeriesSource& source);

// The expression at start, start + step, ... <= end: one series per label set (a scalar as one
// series without labels), as /api/v1/query_range answers.
Result<std::vector<RangeSeries>> EvalRange(const Expr& e, int64_t start_ms, int64_t end_ms,
                                           int64_t step_ms, SeriesSource& source, bool* is_scalar);

}  // namespace trainwatch::prom
