// A real Engine (write-ahead log and RocksDB in a temp dir) for the query layer's tests, and short
// ways to write runs into it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/testing/temp_dir.h"
#include "storage/engine_test_util.h"

namespace trainwatch::query {

// Time of step 0 in the tests' runs: a step is written at kEpoch + step seconds unless told.
inline constexpr double kEpoch = 1767225600.0;

class QueryEngineTest : public ::testing::Test {
 protected:
  void Open(size_t chunk_points = 4) {
    storage::EngineOptions options;
    options.chunk_points = chunk_points;
    engine_.reset();
    auto engine = storage::OpenTestEngine(dir_.path(), options, clock_, logger_, metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
  }

  // Writes (step, value) rows of one metric to project/run, each at kEpoch + step + time_offset.
  void Write(const std::string& project, const std::string& run, const std::string& metric,
             const std::vector<std::pair<int64_t, double>>& rows, double time_offset = 0) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project(project);
    batch->set_run(run);
    v1::MetricColumn* column = batch->add_metrics();
    column->set_name(metric);
    for (auto [step, value] : rows) {
      batch->add_steps(step);
      batch->add_times(kEpoch + time_offset + static_cast<double>(step));
      column->add_values(value);
    }
    storage::WriteAndWait(*engine_, std::move(request));
  }

  void WriteMetadata(const std::string& project, const std::string& run,
                     const std::function<void(v1::RunMetadata*)>& fill) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project(project);
    batch->set_run(run);
    fill(batch->mutable_metadata());
    storage::WriteAndWait(*engine_, std::move(request));
  }

  test::TempDir dir_;
  ManualClock clock_;
  Logger logger_{LogLevel::kWarn};
  MetricsRegistry metrics_;
  std::unique_ptr<storage::Engine> engine_;
};

}  // namespace trainwatch::query
