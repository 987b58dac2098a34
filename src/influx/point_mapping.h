// How InfluxDB points become trainwatch runs, metrics and steps (docs/influx.md, "Mapping"):
//
//   project  the database (/write?db=) or bucket (/api/v2/write?bucket=)
//   run      the value of the first run tag present (default "run", "run_id", "run_name"); else
//            "host:<host>" for a point with a host tag (Telegraf's cpu, mem, nvidia_smi, ...);
//            else the measurement
//   metric   with a metric tag (default "metric_name", the Grafana "Training overview" layout):
//            its value for the value field ("value"), "<metric>/<field>" for other fields;
//            without one, "<measurement>/<field>"; either way followed by the point's other tags
//            in key order, "{key=value,...}", so that two series of one run (two GPUs of a host)
//            stay two metrics and an InfluxQL tag filter can be answered from the name
//   step     the integer value of the step field ("step") if the point has one; else the row is a
//            sample of the run (RunBatch.sampled) numbered by its time in milliseconds
//   time     the timestamp, else the time of receipt
//   host     the host tag, kept as the run's host
//
// Floats, integers and unsigned integers are stored as doubles, booleans as 1 and 0; a string
// field becomes a text entry (the metric's name, at the point's step).
#pragma once

#include <string>
#include <vector>

#include "influx/line_protocol.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::influx {

struct PointMapping {
  std::vector<std::string> run_tags = {"run", "run_id", "run_name"};
  std::string metric_tag = "metric_name";
  std::string value_field = "value";
  std::string step_field = "step";
  std::string host_tag = "host";
};

struct MappedPoints {
  v1::WriteRequest request;       // one batch per (run, sampled)
  std::vector<LineError> errors;  // points that cannot be mapped, with their line
  uint64_t points = 0;            // values mapped (fields, texts included)
};

// Maps the parsed points of one body into `project`; `now` (unix seconds) is the time of points
// without a timestamp. A point whose step field is not a whole number >= 0 is refused with its
// line, and so is one that would put rows with and without a step into one run of the body.
MappedPoints MapPoints(const ParsedBody& parsed, const std::string& project, double now,
                       const PointMapping& mapping = {});

}  // namespace trainwatch::influx
