// trainwatch's alerts as the InfluxDB measurement "trainwatch_alerts" of each database (project),
// for Grafana's annotations (docs/influx.md, "Alerts as annotations"). One point per alert, at the
// time of the incident (the training time of the record it concerns, else when it started):
//
//   tags    project, run, severity, kind, name, metric, status (pending | firing | resolved)
//   fields  text (the message), title ("<name> on <run>"), value, step, time_end (when resolved,
//           unix milliseconds; absent while open)
//
// Raw SELECTs only: fields and tags by name or *, WHERE on time and tags, ORDER BY time [DESC],
// LIMIT, OFFSET; no aggregates, no GROUP BY time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "influx/influxql_ast.h"

namespace trainwatch::influx {

inline constexpr const char* kAlertsMeasurement = "trainwatch_alerts";

struct AlertEvent {
  int64_t time_ns = 0;
  std::map<std::string, std::string> tags;
  std::string text, title;
  double value = 0;
  int64_t step = 0;
  int64_t end_ms = 0;  // 0: not resolved
};

// The alerts of one project (database), in any order.
using AlertSource = std::function<Result<std::vector<AlertEvent>>(const std::string& project)>;

// Whether a SELECT reads trainwatch_alerts (its only source).
bool SelectsAlerts(const ql::SelectStatement& s);

// The answer's series (InfluxDB's JSON shape) of a SELECT that SelectsAlerts. `time_json` writes a
// time (unix ns) as the query's epoch asks.
Result<nlohmann::json> SelectAlerts(const ql::SelectStatement& s, const std::string& default_db,
                                    int64_t now_ns, const AlertSource& source,
                                    const std::function<nlohmann::json(int64_t)>& time_json);

}  // namespace trainwatch::influx
