// The PromQL subset trainwatch answers (docs/prometheus.md), as a syntax tree produced by
// ParsePromQL (promql_parser.h) and evaluated by promql_eval.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trainwatch::prom {

struct LabelMatcher {
  enum class Op { kEqual, kNotEqual, kRegex, kNotRegex };
  std::string name;
  Op op = Op::kEqual;
  std::string value;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kNumber,          // 1.5 (number)
    kString,          // "text" (text)
    kVectorSelector,  // name{matchers} [offset] (matchers, offset_ms)
    kMatrixSelector,  // name{matchers}[range] [offset] (matchers, range_ms, offset_ms)
    kCall,            // rate(x[5m]) (text: function; args)
    kAggregate,       // sum by (l) (x) (text: operator; args: [parameter,] expression; grouping)
    kBinary,          // a + b (text: operator; lhs, rhs; modifiers)
    kNegate,          // -x (lhs)
  };
  Kind kind = Kind::kNumber;
  double number = 0;
  std::string text;
  std::vector<LabelMatcher> matchers;
  int64_t range_ms = 0;
  int64_t offset_ms = 0;
  std::vector<ExprPtr> args;
  // Aggregations: `by (labels)` or `without (labels)`.
  std::vector<std::string> grouping;
  bool without = false;
  // Binary operators: `bool`, and `on (labels)` / `ignoring (labels)` vector matching.
  ExprPtr lhs, rhs;
  bool return_bool = false;
  bool has_matching = false;
  bool on = false;  // else ignoring
  std::vector<std::string> matching;
};

}  // namespace trainwatch::prom
