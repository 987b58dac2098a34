// trainwatch's scalar series as Prometheus series (docs/prometheus.md): every series (project P,
// run R, metric M) is
//   training_metrics{project="P", run="R", metric_name="<M without its {...} tags>", host="...",
//                    <the {...} tags of M>, <the run's key=value tags>}
// with one sample per point (its time in milliseconds). Label names that Prometheus would refuse
// are left out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "prom/promql_eval.h"
#include "query/querier.h"

namespace trainwatch::prom {

inline constexpr const char* kMetricName = "training_metrics";

class QuerierSource final : public SeriesSource {
 public:
  // `projects`: the projects a key may read (empty: all).
  QuerierSource(const query::Querier& querier, std::vector<std::string> projects)
      : querier_(querier), projects_(std::move(projects)) {}

  Result<std::vector<SeriesPoints>> Select(const std::vector<LabelMatcher>& matchers,
                                           int64_t from_ms, int64_t to_ms) override;

  // The label sets the matchers select (all series when none), without their points.
  Result<std::vector<Labels>> Labelled(const std::vector<LabelMatcher>& matchers);

 private:
  struct Entry {
    Labels labels;
    std::string project, run, metric;
  };
  Status LoadCatalog();
  static Result<bool> Matches(const Labels& labels, const std::vector<LabelMatcher>& matchers);

  const query::Querier& querier_;
  const std::vector<std::string> projects_;
  std::optional<std::vector<Entry>> catalog_;  // read once per request
};

}  // namespace trainwatch::prom
