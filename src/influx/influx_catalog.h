// The store seen as InfluxDB for /query (influxql_executor.h says how): every field series of a
// database, with its measurement, field and tags, and the trainwatch series it reads.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "query/querier.h"

namespace trainwatch::influx {

inline constexpr const char* kTrainingMeasurement = "training_metrics";

// One field of one series as InfluxDB would see it, and where its points are.
struct FieldSeries {
  std::string measurement;
  std::string field;
  std::map<std::string, std::string> tags;
  std::string run;
  std::string metric;
  bool is_step = false;  // the "step" field: the points' steps, not their values
};

// "name{k=v,...}" -> ("name", {k: v}); a name without a well-formed suffix is all base.
void SplitMetric(const std::string& metric, std::string* base,
                 std::map<std::string, std::string>* tags);

// Every field series of a database (a project). NotFound "database not found: <db>" when the
// project has no run.
Result<std::vector<FieldSeries>> LoadCatalog(const query::Querier& querier,
                                             const std::string& project);

}  // namespace trainwatch::influx
