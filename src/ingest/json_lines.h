// Parses the newline-delimited JSON body of `POST /api/v1/write` into one WriteRequest.
//
// Each line is one step of one run:
//   {"project": "p", "run": "r", "step": 12, "time": 1767225600.25, "metrics": {"loss": 0.31}}
// plus optional run metadata fields: "name", "group", "tags" (array of strings), "config" (object),
// "status", "host". A line of one rank of a distributed run adds "rank" (with optional
// "world_size", "local_rank"; its "host" is then the rank's): RunBatch.rank. A bad line is reported
// with its 1-based number and reason and contributes nothing; the other lines are converted. Rows
// of the same run and rank are grouped into one RunBatch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/limits.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::ingest {

struct LineError {
  uint64_t line = 0;  // 1-based; 0 when the error is not tied to one line
  std::string message;
};

struct ParsedLines {
  v1::WriteRequest request;
  uint64_t lines_accepted = 0;
  uint64_t points = 0;
  std::vector<LineError> errors;
  // For each run batch, for each of its metric columns, the first line that used it.
  std::vector<std::vector<uint64_t>> column_first_line;
};

// `now` fills in a missing "time"; a missing "project" becomes "default".
ParsedLines ParseJsonLines(std::string_view body, double now, const IngestLimits& limits);

}  // namespace trainwatch::ingest
