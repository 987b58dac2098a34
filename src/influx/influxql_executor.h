// Answers InfluxQL statements (influxql_parser.h) from trainwatch's store, in InfluxDB's JSON
// shape, for Grafana's InfluxDB data source and the influx clients (docs/influx.md, "Queries").
//
// The store seen as InfluxDB (the reverse of point_mapping.h): a database is a project; every
// scalar series (run R, metric M) of it is
//   - a series of the measurement "training_metrics" with tags metric_name=M (without its
//     "{...}" tags), run=R and host, and fields "value" and "step" (not for a host's samples: the
//     run "host:<host>" the write mapping makes for Telegraf's measurements);
//   - and, when M is "<measurement>/<field>" (optionally followed by "{key=value,...}"), a series
//     of <measurement> with field <field> and tags host, run (left out when the run is the one the
//     mapping made up: "host:<host>" or the measurement) and the "{...}" tags.
// So the Grafana "Training overview" panels read what the SDK logs, and what Telegraf wrote comes
// back under its own measurement names. Aggregates are computed from every raw point in range, so
// a panel's max never hides a spike.
#pragma once

#include <string>
#include <vector>

#include "influx/alerts_measurement.h"
#include "influx/influxql_ast.h"
#include "query/querier.h"

namespace trainwatch::influx {

struct InfluxQueryOptions {
  std::string database;  // the `db` parameter: the default for FROM without one
  // The `epoch` parameter: "" answers times as RFC 3339 strings; ns, u, µ, ms, s, m, h as integers.
  std::string epoch;
  double now = 0;  // unix seconds, for now()
  // The most raw points one statement may read (an answer beyond it is an error, not a cut).
  size_t max_points = 10'000'000;
  // The alerts behind the measurement trainwatch_alerts (alerts_measurement.h); unset: it has none.
  AlertSource alerts;
};

// Runs `statements` in order and returns the body of the answer: {"results":[{"statement_id":i,
// "series":[...]} or {"statement_id":i,"error":"..."}]} (a failed statement does not stop the
// others, as in InfluxDB).
std::string ExecuteInfluxQL(const std::vector<ql::Statement>& statements,
                            const InfluxQueryOptions& options, const query::Querier& querier);

}  // namespace trainwatch::influx
