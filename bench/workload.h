// Benchmark workloads in columnar form, and the request bodies built from them before timing.
//
// A workload is R runs, each with rows (step, time) and one dense value column per metric: what
// shared/bench/gen_workload.py writes as workload.jsonl, or a synthetic shape made here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::bench {

struct RunData {
  std::string name;
  std::vector<int64_t> steps;
  std::vector<double> times;
  std::vector<std::vector<double>> columns;  // columns[metric][row], one per Workload::metrics
};

struct Workload {
  std::string project = "default";
  std::vector<std::string> metrics;  // every run has every metric at every row
  std::vector<RunData> runs;
  uint64_t points() const;
};

// Reads gen_workload.py's workload.jsonl. Every line of a run must carry the same metrics as the
// first line of the file; false with `error` (naming the line) otherwise.
bool LoadWorkloadJsonl(const std::string& path, Workload* workload, std::string* error);

// runs x metrics x steps points: run names `<run_prefix>NNNN`, metrics `m<k>`, steps 0..steps-1,
// times 0.25 s apart, values a float32-rounded random walk (deterministic).
Workload SyntheticWorkload(int runs, int metrics, int64_t steps, const std::string& run_prefix);

// One unit of work for a client: a request body (or message) and the points it carries.
struct ProtoBatch {
  v1::WriteRequest request;
  uint64_t points = 0;
};

// Splits the runs assigned to `lane` (run index % lanes == lane) into WriteRequests of one dense
// RunBatch of at most `rows_per_batch` rows each, round-robin over those runs, each run in step
// order.
std::vector<ProtoBatch> BuildProtoBatches(const Workload& workload, int lane, int lanes,
                                          int rows_per_batch);

struct TextBody {
  std::string body;
  uint64_t points = 0;
};

// The same lane split as NDJSON /api/v1/write bodies: lines in step order, interleaving the lane's
// runs, cut into bodies of at least `body_bytes` (the last may be smaller).
std::vector<TextBody> BuildJsonBodies(const Workload& workload, int lane, int lanes,
                                      size_t body_bytes);

}  // namespace trainwatch::bench
