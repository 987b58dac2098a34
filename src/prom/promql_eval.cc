#include "prom/promql_eval.h"

#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <unordered_map>

namespace trainwatch::prom {
namespace {

// What an expression evaluates to at one time.
struct Value {
  enum class Type { kScalar, kVector, kMatrix, kString };
  Type type = Type::kScalar;
  double scalar = 0;
  std::vector<Sample> vector;
  std::vector<SeriesPoints> matrix;  // a range selector's samples per series
};

Labels DropName(Labels l) {
  l.erase("__name__");
  return l;
}

bool IsComparison(const std::string& op) {
  return op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=";
}

// Arithmetic or comparison of two numbers; for a comparison 1 or 0.
double Apply(const std::string& op, double a, double b) {
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "*") return a * b;
  if (op == "/") return a / b;
  if (op == "%") return std::fmod(a, b);
  if (op == "^") return std::pow(a, b);
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  return NAN;
}

// Prometheus's extrapolated rate/increase/delta over one series' samples in a range.
std::optional<double> ExtrapolatedRate(const std::vector<std::pair<int64_t, double>>& s,
                                       int64_t range_start, int64_t range_end, int64_t range_ms,
                                       bool is_counter, bool is_rate) {
  if (s.size() < 2) return std::nullopt;
  double result = s.back().second - s.front().second;
  if (is_counter) {
    double last = 0;
    for (const auto& [t, v] : s) {
      if (v < last) result += last;
      last = v;
    }
  }
  double to_start = static_cast<double>(s.front().first - range_start) / 1000;
  const double to_end = static_cast<double>(range_end - s.back().first) / 1000;
  const double sampled = static_cast<double>(s.back().first - s.front().first) / 1000;
  const double average = sampled / static_cast<double>(s.size() - 1);
  if (is_counter && result > 0 && s.front().second >= 0) {
    const double to_zero = sampled * (s.front().second / result);
    if (to_zero < to_start) to_start = to_zero;
  }
  const double threshold = average * 1.1;
  double interval = sampled;
  interval += to_start < threshold ? to_start : average / 2;
  interval += to_end < threshold ? to_end : average / 2;
  result = result * (interval / sampled);
  if (is_rate) result /= static_cast<double>(range_ms) / 1000;
  return result;
}

// Least-squares slope per second (deriv).
std::optional<double> Slope(const std::vector<std::pair<int64_t, double>>& s) {
  if (s.size() < 2) return std::nullopt;
  const double t0 = static_cast<double>(s.front().first) / 1000;
  double n = 0, sx = 0, sy = 0, sxy = 0, sxx = 0;
  for (const auto& [t, v] : s) {
    const double x = static_cast<double>(t) / 1000 - t0;
    n += 1;
    sx += x;
    sy += v;
    sxy += x * v;
    sxx += x * x;
  }
  const double cov = sxy - sx * sy / n, var = sxx - sx * sx / n;
  return cov / var;
}

std::optional<double> OverTime(const std::string& fn,
                               const std::vector<std::pair<int64_t, double>>& s, double q) {
  if (s.empty()) return std::nullopt;
  if (fn == "count_over_time") return static_cast<double>(s.size());
  if (fn == "last_over_time") return s.back().second;
  double sum = 0, mn = INFINITY, mx = -INFINITY;
  for (const auto& [t, v] : s) {
    sum += v;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
  }
  if (fn == "sum_over_time") return sum;
  if (fn == "avg_over_time") return sum / static_cast<double>(s.size());
  if (fn == "min_over_time") return mn;
  if (fn == "max_over_time") return mx;
  if (fn == "quantile_over_time") {
    std::vector<double> v;
    for (const auto& p : s) v.push_back(p.second);
    std::sort(v.begin(), v.end());
    if (q < 0) return -INFINITY;
    if (q > 1) return INFINITY;
    const double rank = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(rank)), hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (rank - std::floor(rank));
  }
  return std::nullopt;
}

const std::set<std::string> kRangeFunctions = {
    "rate",           "increase",          "delta",
    "deriv",          "avg_over_time",     "min_over_time",
    "max_over_time",  "sum_over_time",     "count_over_time",
    "last_over_time", "quantile_over_time"};

class Evaluator {
 public:
  Evaluator(SeriesSource& source, int64_t from_ms, int64_t to_ms)
      : source_(source), from_(from_ms), to_(to_ms) {}

  Result<Value> Eval(const Expr& e, int64_t t) {
    switch (e.kind) {
      case Expr::Kind::kNumber:
        return Scalar(e.number);
      case Expr::Kind::kString: {
        Value v;
        v.type = Value::Type::kString;
        return v;
      }
      case Expr::Kind::kVectorSelector:
        return InstantSelector(e, t);
      case Expr::Kind::kMatrixSelector:
        return RangeSelector(e, t);
      case Expr::Kind::kNegate: {
        Result<Value> v = Eval(*e.lhs, t);
        if (!v.ok()) return v;
        if (v->type == Value::Type::kScalar) return Scalar(-v->scalar);
        for (Sample& s : v->vector) {
          s.value = -s.value;
          s.labels = DropName(std::move(s.labels));
        }
        return v;
      }
      case Expr::Kind::kCall:
        return Call(e, t);
      case Expr::Kind::kAggregate:
        return Aggregate(e, t);
      case Expr::Kind::kBinary:
        return Binary(e, t);
    }
    return Status::Internal("unknown expression");
  }

 private:
  static Value Scalar(double x) {
    Value v;
    v.scalar = x;
    return v;
  }

  // A selector's series with their points in the whole evaluation window, loaded once.
  Result<const std::vector<SeriesPoints>*> Series(const Expr& e) {
    auto it = cache_.find(&e);
    if (it != cache_.end()) return &it->second;
    Result<std::vector<SeriesPoints>> s = source_.Select(e.matchers, from_, to_);
    if (!s.ok()) return s.status();
    return &cache_.emplace(&e, std::move(*s)).first->second;
  }

  Result<Value> InstantSelector(const Expr& e, int64_t t) {
    Result<const std::vector<SeriesPoints>*> series = Series(e);
    if (!series.ok()) return series.status();
    Value v;
    v.type = Value::Type::kVector;
    const int64_t at = t - e.offset_ms;
    for (const SeriesPoints& s : **series) {
      // The newest sample at or before `at`, no older than the lookback.
      auto after = std::upper_bound(s.points.begin(), s.points.end(), at,
                                    [](int64_t x, const auto& p) { return x < p.first; });
      if (after == s.points.begin()) continue;
      const auto& p = *std::prev(after);
      if (p.first < at - kLookbackMs) continue;
      v.vector.push_back({s.labels, p.second});
    }
    return v;
  }

  Result<Value> RangeSelector(const Expr& e, int64_t t) {
    Result<const std::vector<SeriesPoints>*> series = Series(e);
    if (!series.ok()) return series.status();
    Value v;
    v.type = Value::Type::kMatrix;
    const int64_t end = t - e.offset_ms, start = end - e.range_ms;
    for (const SeriesPoints& s : **series) {
      SeriesPoints window{s.labels, {}};
      auto lo = std::lower_bound(s.points.begin(), s.points.end(), start,
                                 [](const auto& p, int64_t x) { return p.first < x; });
      for (auto p = lo; p != s.points.end() && p->first <= end; ++p) window.points.push_back(*p);
      if (!window.points.empty()) v.matrix.push_back(std::move(window));
    }
    return v;
  }

  Result<Value> Call(const Expr& e, int64_t t) {
    const std::string& fn = e.text;
    if (fn == "time" && e.args.empty()) return Scalar(static_cast<double>(t) / 1000);
    if (kRangeFunctions.contains(fn)) {
      const size_t matrix_arg = fn == "quantile_over_time" ? 1 : 0;
      if (e.args.size() != matrix_arg + 1 ||
          e.args[matrix_arg]->kind != Expr::Kind::kMatrixSelector) {
        return Status::InvalidArgument("expected type range vector in call to function \"" + fn +
                                       "\"");
      }
      double q = 0;
      if (matrix_arg == 1) {
        Result<Value> qv = Eval(*e.args[0], t);
        if (!qv.ok()) return qv;
        q = qv->scalar;
      }
      const Expr& m = *e.args[matrix_arg];
      Result<Value> range = Eval(m, t);
      if (!range.ok()) return range;
      Value out;
      out.type = Value::Type::kVector;
      const int64_t end = t - m.offset_ms, start = end - m.range_ms;
      for (const SeriesPoints& s : range->matrix) {
        std::optional<double> v;
        if (fn == "rate" || fn == "increase" || fn == "delta") {
          v = ExtrapolatedRate(s.points, start, end, m.range_ms, fn != "delta", fn == "rate");
        } else if (fn == "deriv") {
          v = Slope(s.points);
        } else {
          v = OverTime(fn, s.points, q);
        }
        if (v) out.vector.push_back({DropName(s.labels), *v});
      }
      return out;
    }
    static const std::set<std::string> kMath = {"abs", "ceil", "floor", "exp",
                                                "ln",  "log2", "log10", "sqrt"};
    if (kMath.contains(fn) || fn == "clamp_min" || fn == "clamp_max" || fn == "scalar" ||
        fn == "vector") {
      if (e.args.empty())
        return Status::InvalidArgument("expected 1 argument in call to \"" + fn + "\"");
      Result<Value> arg = Eval(*e.args[0], t);
      if (!arg.ok()) return arg;
      if (fn == "vector") {
        Value out;
        out.type = Value::Type::kVector;
        out.vector.push_back({{}, arg->scalar});
        return out;
      }
      if (arg->type != Value::Type::kVector) {
        return Status::InvalidArgument("expected type instant vector in call to function \"" + fn +
                                       "\"");
      }
      if (fn == "scalar") return Scalar(arg->vector.size() == 1 ? arg->vector[0].value : NAN);
      double bound = 0;
      if (fn == "clamp_min" || fn == "clamp_max") {
        if (e.args.size() != 2)
          return Status::InvalidArgument("expected 2 arguments in call to \"" + fn + "\"");
        Result<Value> b = Eval(*e.args[1], t);
        if (!b.ok()) return b;
        bound = b->scalar;
      }
      for (Sample& s : arg->vector) {
        double& x = s.value;
        if (fn == "abs")
          x = std::fabs(x);
        else if (fn == "ceil")
          x = std::ceil(x);
        else if (fn == "floor")
          x = std::floor(x);
        else if (fn == "exp")
          x = std::exp(x);
        else if (fn == "ln")
          x = std::log(x);
        else if (fn == "log2")
          x = std::log2(x);
        else if (fn == "log10")
          x = std::log10(x);
        else if (fn == "sqrt")
          x = std::sqrt(x);
        else if (fn == "clamp_min")
          x = std::max(x, bound);
        else if (fn == "clamp_max")
          x = std::min(x, bound);
        s.labels = DropName(std::move(s.labels));
      }
      return arg;
    }
    return Status::InvalidArgument("unknown function with name \"" + fn + "\"");
  }

  Result<Value> Aggregate(const Expr& e, int64_t t) {
    const bool k_op = e.text == "topk" || e.text == "bottomk";
    double k = 0;
    if (k_op) {
      Result<Value> kv = Eval(*e.args[0], t);
      if (!kv.ok()) return kv;
      k = kv->scalar;
    }
    Result<Value> in = Eval(*e.args.back(), t);
    if (!in.ok()) return in;
    if (in->type != Value::Type::kVector) {
      return Status::InvalidArgument("expected type instant vector in aggregation expression");
    }
    // Samples by their group's labels.
    std::map<Labels, std::vector<const Sample*>> groups;
    for (const Sample& s : in->vector) {
      Labels key;
      if (e.without) {
        key = DropName(s.labels);
        for (const std::string& l : e.grouping) key.erase(l);
      } else {
        for (const std::string& l : e.grouping) {
          auto it = s.labels.find(l);
          if (it != s.labels.end()) key[l] = it->second;
        }
      }
      groups[key].push_back(&s);
    }
    Value out;
    out.type = Value::Type::kVector;
    for (auto& [labels, members] : groups) {
      if (k_op) {
        std::vector<const Sample*> sorted = members;
        std::stable_sort(sorted.begin(), sorted.end(), [&](const Sample* a, const Sample* b) {
          return e.text == "topk" ? a->value > b->value : a->value < b->value;
        });
        for (size_t i = 0; i < sorted.size() && static_cast<double>(i) < k; ++i)
          out.vector.push_back(*sorted[i]);
        continue;
      }
      double sum = 0, mn = INFINITY, mx = -INFINITY;
      for (const Sample* s : members) {
        sum += s->value;
        mn = std::min(mn, s->value);
        mx = std::max(mx, s->value);
      }
      double v = sum;
      if (e.text == "avg")
        v = sum / static_cast<double>(members.size());
      else if (e.text == "min")
        v = mn;
      else if (e.text == "max")
        v = mx;
      else if (e.text == "count")
        v = static_cast<double>(members.size());
      out.vector.push_back({labels, v});
    }
    return out;
  }

  // The labels two samples are matched on.
  static Labels Signature(const Labels& l, const Expr& e) {
    Labels out;
    if (e.has_matching && e.on) {
      for (const std::string& name : e.matching) {
        auto it = l.find(name);
        if (it != l.end()) out[name] = it->second;
      }
      return out;
    }
    out = DropName(l);
    for (const std::string& name : e.matching) out.erase(name);
    return out;
  }

  Result<Value> Binary(const Expr& e, int64_t t) {
    Result<Value> a = Eval(*e.lhs, t);
    if (!a.ok()) return a;
    Result<Value> b = Eval(*e.rhs, t);
    if (!b.ok()) return b;
    const std::string& op = e.text;
    const bool cmp = IsComparison(op);
    if (a->type == Value::Type::kScalar && b->type == Value::Type::kScalar) {
      if (cmp && !e.return_bool)
        return Status::InvalidArgument("comparisons between scalars must use BOOL modifier");
      return Scalar(Apply(op, a->scalar, b->scalar));
    }
    if (op == "and" || op == "or" || op == "unless") {
      if (a->type != Value::Type::kVector || b->type != Value::Type::kVector) {
        return Status::InvalidArgument("set operator \"" + op +
                                       "\" not allowed in binary scalar expression");
      }
      std::set<Labels> right;
      for (const Sample& s : b->vector) right.insert(Signature(s.labels, e));
      Value out;
      out.type = Value::Type::kVector;
      std::set<Labels> left;
      for (const Sample& s : a->vector) {
        const bool matched = right.contains(Signature(s.labels, e));
        left.insert(Signature(s.labels, e));
        if (op == "or" || (op == "and" && matched) || (op == "unless" && !matched))
          out.vector.push_back(s);
      }
      if (op == "or") {
        for (const Sample& s : b->vector) {
          if (!left.contains(Signature(s.labels, e))) out.vector.push_back(s);
        }
      }
      return out;
    }
    if (a->type == Value::Type::kMatrix || b->type == Value::Type::kMatrix) {
      return Status::InvalidArgument(
          "binary expression must contain only scalar and instant vector types");
    }
    Value out;
    out.type = Value::Type::kVector;
    if (a->type == Value::Type::kScalar || b->type == Value::Type::kScalar) {
      const bool vector_left = a->type == Value::Type::kVector;
      const Value& vec = vector_left ? *a : *b;
      const double x = vector_left ? b->scalar : a->scalar;
      for (const Sample& s : vec.vector) {
        const double r = vector_left ? Apply(op, s.value, x) : Apply(op, x, s.value);
        if (cmp && !e.return_bool) {
          if (r != 0) out.vector.push_back(s);  // a filter keeps the sample as it was
          continue;
        }
        out.vector.push_back({DropName(s.labels), r});
      }
      return out;
    }
    // Vector with vector, one to one.
    std::map<Labels, const Sample*> right;
    for (const Sample& s : b->vector) {
      if (!right.emplace(Signature(s.labels, e), &s).second) {
        return Status::InvalidArgument(
            "found duplicate series for the match group on the right hand-side of the operation: "
            "many-to-many "
            "matching not allowed: matching labels must be unique on one side");
      }
    }
    std::set<Labels> seen;
    for (const Sample& s : a->vector) {
      const Labels sig = Signature(s.labels, e);
      auto match = right.find(sig);
      if (match == right.end()) continue;
      if (!seen.insert(sig).second) {
        return Status::InvalidArgument(
            "multiple matches for labels: many-to-one matching must be explicit "
            "(group_left/group_right)");
      }
      const double r = Apply(op, s.value, match->second->value);
      if (cmp && !e.return_bool) {
        if (r != 0) out.vector.push_back(s);
        continue;
      }
      Labels labels = DropName(s.labels);
      if (e.has_matching && e.on) {
        labels = sig;
      } else {
        for (const std::string& name : e.matching) labels.erase(name);
      }
      out.vector.push_back({std::move(labels), r});
    }
    return out;
  }

  SeriesSource& source_;
  const int64_t from_, to_;
  std::unordered_map<const Expr*, std::vector<SeriesPoints>> cache_;
};

// How far back of the evaluation times the expression's selectors read (lookback or range, plus
// offset), and how far ahead (a negative offset).
void Window(const Expr& e, int64_t* back, int64_t* ahead) {
  if (e.kind == Expr::Kind::kVectorSelector || e.kind == Expr::Kind::kMatrixSelector) {
    const int64_t reach =
        (e.kind == Expr::Kind::kMatrixSelector ? e.range_ms : kLookbackMs) + e.offset_ms;
    *back = std::max(*back, reach);
    *ahead = std::max(*ahead, -e.offset_ms);
  }
  for (const ExprPtr& a : e.args) Window(*a, back, ahead);
  if (e.lhs) Window(*e.lhs, back, ahead);
  if (e.rhs) Window(*e.rhs, back, ahead);
}

Result<InstantValue> ToInstant(Result<Value> v) {
  if (!v.ok()) return v.status();
  InstantValue out;
  if (v->type == Value::Type::kScalar) {
    out.is_scalar = true;
    out.scalar = v->scalar;
    return out;
  }
  if (v->type != Value::Type::kVector) {
    return Status::InvalidArgument("the expression must evaluate to a scalar or an instant vector");
  }
  out.vector = std::move(v->vector);
  return out;
}

}  // namespace

Result<InstantValue> EvalInstant(const Expr& e, int64_t time_ms, SeriesSource& source) {
  int64_t back = 0, ahead = 0;
  Window(e, &back, &ahead);
  Evaluator eval(source, time_ms - back, time_ms + ahead);
  return ToInstant(eval.Eval(e, time_ms));
}

Result<std::vector<RangeSeries>> EvalRange(const Expr& e, int64_t start_ms, int64_t end_ms,
                                           int64_t step_ms, SeriesSource& source, bool* is_scalar) {
  if (step_ms <= 0)
    return Status::InvalidArgument(
        "zero or negative query resolution step widths are not accepted");
  if ((end_ms - start_ms) / step_ms > 11000) {
    return Status::InvalidArgument(
        "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing "
        "the query resolution (?step=XX)");
  }
  int64_t back = 0, ahead = 0;
  Window(e, &back, &ahead);
  Evaluator eval(source, start_ms - back, end_ms + ahead);
  std::map<Labels, std::vector<std::pair<int64_t, double>>> series;
  *is_scalar = false;
  for (int64_t t = start_ms; t <= end_ms; t += step_ms) {
    Result<InstantValue> v = ToInstant(eval.Eval(e, t));
    if (!v.ok()) return v.status();
    if (v->is_scalar) {
      *is_scalar = true;
      series[{}].emplace_back(t, v->scalar);
      continue;
    }
    for (const Sample& s : v->vector) series[s.labels].emplace_back(t, s.value);
  }
  std::vector<RangeSeries> out;
  for (auto& [labels, points] : series) out.push_back({labels, std::move(points)});
  return out;
}

}  // namespace trainwatch::prom
