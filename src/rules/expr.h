// Expr: a compiled rule condition such as `mean(grad_norm, 100) > 10 and loss > 0.5`
// (grammar: docs/rules.md). Immutable after parsing; Evaluate is const and allocation-free, so one
// Expr is shared by every run that uses the rule.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "rules/window.h"

namespace trainwatch::rules {

// The longest expression text accepted, in bytes.
inline constexpr size_t kMaxExprLength = 4096;

// A windowed function of a metric: `mean(loss, 100)` is {kMean, "loss", 100}.
struct WindowRef {
  WindowFn fn;
  std::string metric;
  int64_t n;
  friend bool operator==(const WindowRef&, const WindowRef&) = default;
};

class Expr {
 public:
  // Parses and type-checks `text`. On failure InvalidArgument "column C: reason", C counting
  // bytes of `text` from 1 (the offending token, or one past the end).
  static Result<Expr> Parse(std::string_view text);

  // The outcome of one evaluation.
  struct Outcome {
    bool holds;    // the condition; any comparison with a NaN operand is false
    double value;  // the first comparison's left-hand side (see value_description())
  };
  // `latest[i]` is the newest value of metrics()[i]; `windows[j]` the current value of
  // windows()[j]. Both spans must have exactly those sizes.
  Outcome Evaluate(std::span<const double> latest, std::span<const double> windows) const;

  // The source text as written (trimmed).
  const std::string& text() const { return text_; }
  // Fully parenthesised canonical form: `loss > 0.5 * x` -> "(loss > (0.5 * x))". Two
  // expressions that differ only in spacing or redundant parentheses have the same canonical form.
  std::string Canonical() const;
  // Every metric the expression reads, bare or inside a window, in order of first appearance.
  // Never empty: an expression over constants only is rejected.
  const std::vector<std::string>& metrics() const { return metrics_; }
  // Distinct windowed functions, in order of first appearance.
  const std::vector<WindowRef>& windows() const { return windows_; }

 private:
  friend class ExprParser;
  enum class Op {
    kNumber,
    kMetric,
    kWindow,
    kNeg,
    kNot,
    kAdd,
    kSub,
    kMul,
    kDiv,
    kGt,
    kGe,
    kLt,
    kLe,
    kEq,
    kNe,
    kAnd,
    kOr,
    kAbs,
    kIsNan,
    kIsFinite,
  };
  struct Node {
    Op op;
    int lhs = -1, rhs = -1;  // operand node indexes
    double number = 0;       // kNumber
    int ref = -1;            // kMetric: index into metrics_; kWindow: into windows_
  };

  double Eval(int node, std::span<const double> latest, std::span<const double> windows,
              double* value) const;
  void AppendCanonical(int node, std::string* out) const;

  std::string text_;
  std::vector<Node> nodes_;
  int root_ = -1;
  int value_node_ = -1;  // the LHS of the first comparison; -1: report the first metric's value
  std::vector<std::string> metrics_;
  std::vector<WindowRef> windows_;
};

// The function name as written in expressions ("mean", "delta", ...).
std::string_view WindowFnName(WindowFn fn);

// True if `name` can be written in an expression without backticks: it starts with a letter or
// `_`, continues with letters, digits, `_`, `.`, `:` and `/`, every `/` is followed by a letter,
// digit or `_`, and it is not a keyword (and, or, not, inf, nan in any case).
bool IsBareMetricName(std::string_view name);

}  // namespace trainwatch::rules
