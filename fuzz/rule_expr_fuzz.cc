// Rule expressions (src/rules/expr.h, grammar in docs/rules.md), as the `expr:` of an alerting
// file brings them, then evaluated over the windows they ask for.
//
// Checks, besides memory safety: a parsed expression reads at least one metric and its windows
// have 1 <= n <= kMaxWindow; its canonical form, when it parses again, has the same canonical
// form and the same metrics and windows; evaluation with finite, NaN and infinite inputs runs.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "rules/expr.h"
#include "rules/window.h"

namespace {

using trainwatch::rules::Expr;
using trainwatch::rules::MetricWindow;

void Evaluate(const Expr& expr) {
  const size_t metrics = expr.metrics().size();
  const size_t windows = expr.windows().size();
  const double inputs[] = {0.5, -2, 0, std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity(), 1e308};
  // Every window over one MetricWindow per metric, pushed a few values, as the evaluator does.
  std::vector<MetricWindow> rings(metrics);
  std::vector<size_t> handles;
  for (const auto& w : expr.windows()) {
    size_t m = 0;
    while (expr.metrics()[m] != w.metric) ++m;
    handles.push_back(rings[m].Add(w.fn, w.n));
  }
  std::vector<double> latest(metrics), values(windows);
  for (double v : inputs) {
    for (size_t m = 0; m < metrics; ++m) {
      rings[m].Push(v);
      latest[m] = v;
    }
    for (size_t j = 0; j < windows; ++j) {
      size_t m = 0;
      while (expr.metrics()[m] != expr.windows()[j].metric) ++m;
      values[j] = rings[m].Value(handles[j]);
    }
    (void)expr.Evaluate(latest, values);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = Expr::Parse(text);
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.status().message().starts_with("column "), parsed.status().message());
    return 0;
  }
  const Expr& expr = *parsed;
  FUZZ_CHECK(!expr.metrics().empty(), "an expression without metrics");
  for (const auto& w : expr.windows()) {
    FUZZ_CHECK(w.n >= 1 && w.n <= trainwatch::rules::kMaxWindow, "window size " + std::to_string(w.n));
    bool known = false;
    for (const std::string& m : expr.metrics()) known = known || m == w.metric;
    FUZZ_CHECK(known, "a window over a metric not in metrics(): " + w.metric);
  }
  const std::string canonical = expr.Canonical();
  auto again = Expr::Parse(canonical);
  if (again.ok()) {
    FUZZ_CHECK(again->Canonical() == canonical, canonical + " -> " + again->Canonical());
    FUZZ_CHECK(again->metrics() == expr.metrics(), "metrics differ after " + canonical);
    FUZZ_CHECK(again->windows() == expr.windows(), "windows differ after " + canonical);
  }
  Evaluate(expr);
  return 0;
}
