// ParseJsonLines (src/ingest/json_lines.h): the body of POST /api/v1/write as JSON lines.
//
// Checks, besides memory safety, the contract the Ingestor and the engine rely on: every line is
// either accepted or has one error with its number; the request holds one batch per (project,
// run) with valid names, a time per step, non-negative steps and finite times; each column is
// dense (a value per step) or has strictly increasing rows inside the batch; column_first_line
// has one entry per column; `points` counts the values; configs are JSON objects.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include "fuzz/fuzz_support.h"
#include "ingest/json_lines.h"
#include "ingest/limits.h"

namespace {

using namespace trainwatch;

ingest::IngestLimits FuzzLimits() {
  ingest::IngestLimits limits;
  // Small, so that inputs of a few hundred bytes reach every limit.
  limits.max_name_bytes = 24;
  limits.max_metrics_per_run = 8;
  limits.max_metadata_bytes = 200;
  return limits;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ingest::IngestLimits limits = FuzzLimits();
  constexpr double kNow = 1767225600.5;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  ingest::ParsedLines parsed = ingest::ParseJsonLines(body, kNow, limits);

  uint64_t lines = 0;
  for (size_t pos = 0; pos < body.size(); ++lines) {
    size_t nl = body.find('\n', pos);
    pos = nl == std::string_view::npos ? body.size() : nl + 1;
  }
  FUZZ_CHECK(parsed.lines_accepted + parsed.errors.size() <= lines, "more outcomes than lines");
  uint64_t last_error_line = 0;
  for (const ingest::LineError& e : parsed.errors) {
    FUZZ_CHECK(e.line > last_error_line && e.line <= lines,
               "error line out of order: " + e.message);
    FUZZ_CHECK(!e.message.empty(), "empty error message");
    last_error_line = e.line;
  }

  const v1::WriteRequest& request = parsed.request;
  FUZZ_CHECK(parsed.column_first_line.size() == static_cast<size_t>(request.runs_size()),
             "column_first_line: one entry per batch");
  // One batch per run and rank (-1: lines that name no rank; an explicit rank 0 carries RankInfo).
  std::set<std::tuple<std::string, std::string, int64_t>> runs;
  uint64_t points = 0;
  for (int b = 0; b < request.runs_size(); ++b) {
    const v1::RunBatch& batch = request.runs(b);
    const int64_t rank = batch.has_rank() ? static_cast<int64_t>(batch.rank().rank()) : -1;
    FUZZ_CHECK(runs.insert({batch.project(), batch.run(), rank}).second,
               "two batches for one rank of a run");
    FUZZ_CHECK(ingest::ValidateName("project", batch.project(), limits).ok(), batch.project());
    FUZZ_CHECK(ingest::ValidateName("run", batch.run(), limits).ok(), batch.run());
    const int rows = batch.steps_size();
    FUZZ_CHECK(batch.times_size() == rows, "a time per step");
    for (int r = 0; r < rows; ++r) {
      FUZZ_CHECK(batch.steps(r) >= 0, "negative step");
      FUZZ_CHECK(std::isfinite(batch.times(r)) && batch.times(r) >= 0, "bad time");
    }
    FUZZ_CHECK(parsed.column_first_line[b].size() == static_cast<size_t>(batch.metrics_size()),
               "column_first_line: one entry per column");
    std::set<std::string> names;
    for (int c = 0; c < batch.metrics_size(); ++c) {
      const v1::MetricColumn& column = batch.metrics(c);
      FUZZ_CHECK(names.insert(column.name()).second, "metric twice in a batch: " + column.name());
      FUZZ_CHECK(ingest::ValidateName("metric", column.name(), limits).ok(), column.name());
      FUZZ_CHECK(parsed.column_first_line[b][c] >= 1 && parsed.column_first_line[b][c] <= lines,
                 "first line out of range");
      if (column.rows_size() == 0) {
        FUZZ_CHECK(column.values_size() == rows, "dense column of the wrong length");
      } else {
        FUZZ_CHECK(column.rows_size() == column.values_size(), "rows and values differ");
        for (int i = 0; i < column.rows_size(); ++i) {
          FUZZ_CHECK(column.rows(i) < static_cast<uint32_t>(rows), "row out of range");
          FUZZ_CHECK(i == 0 || column.rows(i) > column.rows(i - 1), "rows not increasing");
        }
      }
      points += column.values_size();
    }
    if (batch.has_metadata() && batch.metadata().has_config_json()) {
      auto config = nlohmann::json::parse(batch.metadata().config_json(), nullptr, false);
      FUZZ_CHECK(config.is_object(),
                 "config is not a JSON object: " + batch.metadata().config_json());
    }
  }
  FUZZ_CHECK(points == parsed.points, "points miscounted");
  return 0;
}
