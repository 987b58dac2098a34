#include "rules/expr.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace trainwatch::rules {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Comparison with IEEE semantics except that `!=` is also false when an operand is NaN.
double Compare(bool ordered, bool result) { return ordered && result ? 1.0 : 0.0; }

void AppendNumber(double v, std::string* out) {
  if (std::isnan(v)) {
    *out += "nan";
  } else if (std::isinf(v)) {
    *out += v > 0 ? "inf" : "-inf";
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out->append(buf, ec == std::errc() ? end : buf);
  }
}

void AppendName(std::string_view name, std::string* out) {
  if (IsBareMetricName(name)) {
    *out += name;
  } else {
    *out += '`';
    *out += name;
    *out += '`';
  }
}

}  // namespace

std::string_view WindowFnName(WindowFn fn) {
  switch (fn) {
    case WindowFn::kMean:
      return "mean";
    case WindowFn::kSum:
      return "sum";
    case WindowFn::kMax:
      return "max";
    case WindowFn::kMin:
      return "min";
    case WindowFn::kDelta:
      return "delta";
  }
  return "?";
}

Expr::Outcome Expr::Evaluate(std::span<const double> latest,
                             std::span<const double> windows) const {
  double value = kNaN;
  const double result = Eval(root_, latest, windows, &value);
  if (value_node_ < 0) value = latest.empty() ? kNaN : latest[0];
  return {result != 0 && !std::isnan(result), value};
}

double Expr::Eval(int index, std::span<const double> latest, std::span<const double> windows,
                  double* value) const {
  const Node& n = nodes_[static_cast<size_t>(index)];
  double a = 0, b = 0;
  if (n.lhs >= 0) a = Eval(n.lhs, latest, windows, value);
  if (n.rhs >= 0) b = Eval(n.rhs, latest, windows, value);
  if (index == value_node_) *value = a;
  const bool ordered = !std::isnan(a) && !std::isnan(b);
  switch (n.op) {
    case Op::kNumber:
      return n.number;
    case Op::kMetric:
      return latest[static_cast<size_t>(n.ref)];
    case Op::kWindow:
      return windows[static_cast<size_t>(n.ref)];
    case Op::kNeg:
      return -a;
    case Op::kNot:
      return a != 0 ? 0.0 : 1.0;
    case Op::kAdd:
      return a + b;
    case Op::kSub:
      return a - b;
    case Op::kMul:
      return a * b;
    case Op::kDiv:
      return a / b;  // x/0 is +-inf, 0/0 is NaN: comparisons with them behave as IEEE
    case Op::kGt:
      return Compare(ordered, a > b);
    case Op::kGe:
      return Compare(ordered, a >= b);
    case Op::kLt:
      return Compare(ordered, a < b);
    case Op::kLe:
      return Compare(ordered, a <= b);
    case Op::kEq:
      return Compare(ordered, a == b);
    case Op::kNe:
      return Compare(ordered, a != b);
    case Op::kAnd:
      return a != 0 && b != 0 ? 1.0 : 0.0;
    case Op::kOr:
      return a != 0 || b != 0 ? 1.0 : 0.0;
    case Op::kAbs:
      return std::fabs(a);
    case Op::kIsNan:
      return std::isnan(a) ? 1.0 : 0.0;
    case Op::kIsFinite:
      return std::isfinite(a) ? 1.0 : 0.0;
  }
  return kNaN;
}

std::string Expr::Canonical() const {
  std::string out;
  AppendCanonical(root_, &out);
  return out;
}

void Expr::AppendCanonical(int index, std::string* out) const {
  const Node& n = nodes_[static_cast<size_t>(index)];
  auto binary = [&](std::string_view op) {
    *out += '(';
    AppendCanonical(n.lhs, out);
    *out += ' ';
    *out += op;
    *out += ' ';
    AppendCanonical(n.rhs, out);
    *out += ')';
  };
  auto call = [&](std::string_view fn) {
    *out += fn;
    *out += '(';
    AppendCanonical(n.lhs, out);
    *out += ')';
  };
  switch (n.op) {
    case Op::kNumber:
      AppendNumber(n.number, out);
      return;
    case Op::kMetric:
      AppendName(metrics_[static_cast<size_t>(n.ref)], out);
      return;
    case Op::kWindow: {
      const WindowRef& w = windows_[static_cast<size_t>(n.ref)];
      *out += WindowFnName(w.fn);
      *out += '(';
      AppendName(w.metric, out);
      *out += ", " + std::to_string(w.n) + ")";
      return;
    }
    case Op::kNeg:
      *out += "(-";
      AppendCanonical(n.lhs, out);
      *out += ')';
      return;
    case Op::kNot:
      *out += "(not ";
      AppendCanonical(n.lhs, out);
      *out += ')';
      return;
    case Op::kAdd:
      binary("+");
      return;
    case Op::kSub:
      binary("-");
      return;
    case Op::kMul:
      binary("*");
      return;
    case Op::kDiv:
      binary("/");
      return;
    case Op::kGt:
      binary(">");
      return;
    case Op::kGe:
      binary(">=");
      return;
    case Op::kLt:
      binary("<");
      return;
    case Op::kLe:
      binary("<=");
      return;
    case Op::kEq:
      binary("==");
      return;
    case Op::kNe:
      binary("!=");
      return;
    case Op::kAnd:
      binary("and");
      return;
    case Op::kOr:
      binary("or");
      return;
    case Op::kAbs:
      call("abs");
      return;
    case Op::kIsNan:
      call("isnan");
      return;
    case Op::kIsFinite:
      call("isfinite");
      return;
  }
}

}  // namespace trainwatch::rules
