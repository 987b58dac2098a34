// The engine's run data besides scalar points: histograms, graphs, heartbeats, and sampled rows
// (which stay out of the run clock).
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <limits>

#include "common/testing/temp_dir.h"
#include "storage/engine.h"
#include "storage/engine_test_util.h"

namespace trainwatch::storage {
namespace {

constexpr double kT0 = 1767225600.0;

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

v1::Histogram MakeHistogram(const std::string& name, int64_t step, double time,
                            std::vector<double> edges, std::vector<double> counts) {
  v1::Histogram h;
  h.set_name(name);
  h.set_step(step);
  h.set_time(time);
  for (double e : edges) h.add_edges(e);
  for (double c : counts) h.add_counts(c);
  return h;
}

class RunDataTest : public ::testing::Test {
 protected:
  void Open(size_t chunk_points = 4) {
    engine_.reset();
    EngineOptions options;
    options.chunk_points = chunk_points;
    auto engine = OpenTestEngine(dir_.path(), options, clock_, logger_, metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
  }

  // A batch of run "r" in project "p".
  static v1::RunBatch* Batch(v1::WriteRequest* request, const std::string& run = "r") {
    v1::RunBatch* batch = request->add_runs();
    batch->set_project("p");
    batch->set_run(run);
    return batch;
  }

  WriteOutcome Write(v1::WriteRequest request) { return WriteAndWait(*engine_, std::move(request)); }

  void WriteHistograms(std::vector<v1::Histogram> histograms, const std::string& run = "r") {
    v1::WriteRequest request;
    v1::RunBatch* batch = Batch(&request, run);
    for (auto& h : histograms) *batch->add_histograms() = std::move(h);
    Write(std::move(request));
  }

  // Rows (step, time) with one value each of `metric`.
  void WriteRows(const std::string& metric, const std::vector<std::pair<int64_t, double>>& rows,
                 bool sampled) {
    v1::WriteRequest request;
    v1::RunBatch* batch = Batch(&request);
    batch->set_sampled(sampled);
    v1::MetricColumn* column = batch->add_metrics();
    column->set_name(metric);
    for (auto [step, time] : rows) {
      batch->add_steps(step);
      batch->add_times(time);
      column->add_values(static_cast<double>(step) / 4);
    }
    Write(std::move(request));
  }

  void WriteMetadata(const std::function<void(v1::RunMetadata*)>& fill) {
    v1::WriteRequest request;
    fill(Batch(&request)->mutable_metadata());
    Write(std::move(request));
  }

  void Heartbeat(double received, double interval = 0.5) {
    v1::WriteRequest request;
    v1::Heartbeat* hb = Batch(&request)->mutable_heartbeat();
    hb->set_interval_seconds(interval);
    hb->set_received_time(received);
    Write(std::move(request));
  }

  std::vector<Histogram> ReadHistograms(const std::string& name,
                                        HistogramReadOptions options = {}) {
    std::vector<Histogram> out;
    Status s = engine_->ReadHistograms({"p", "r", name}, options, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  RunInfo Run() {
    auto run = engine_->GetRun("p", "r");
    EXPECT_TRUE(run.has_value());
    return run.value_or(RunInfo{});
  }

  test::TempDir dir_;
  ManualClock clock_;
  Logger logger_{LogLevel::kWarn};
  MetricsRegistry metrics_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(RunDataTest, HistogramsRoundTripBitExactAndReplaceByStep) {
  Open();
  WriteHistograms({MakeHistogram("w", 10, kT0 + 10, {-1, 0, 1}, {2, 3}),
                   MakeHistogram("w", 20, kT0 + 20, {-0.0, 1e-310, 2}, {0.5, 1e300}),
                   MakeHistogram("g", 5, kT0 + 5, {0, 1}, {7})});
  // Step 10 again: replaced, not added.
  WriteHistograms({MakeHistogram("w", 10, kT0 + 11, {0, 2, 4, 8}, {1, 1, 1})});
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Histogram> w = ReadHistograms("w");
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0].step, 10);
    EXPECT_EQ(w[0].time, kT0 + 11);
    EXPECT_EQ(w[0].edges, (std::vector<double>{0, 2, 4, 8}));
    EXPECT_EQ(w[0].counts, (std::vector<double>{1, 1, 1}));
    EXPECT_EQ(w[1].step, 20);
    EXPECT_EQ(Bits(w[1].edges[0]), Bits(-0.0));
    EXPECT_EQ(Bits(w[1].edges[1]), Bits(1e-310));
    EXPECT_EQ(Bits(w[1].counts[1]), Bits(1e300));

    auto metrics = engine_->ListMetrics("p", "r");
    ASSERT_EQ(metrics.size(), 2u);
    EXPECT_EQ(metrics[0].name, "g");
    EXPECT_EQ(metrics[0].kind, "histogram");
    EXPECT_EQ(metrics[0].count, 1u);
    EXPECT_EQ(metrics[1].name, "w");
    EXPECT_EQ(metrics[1].count, 2u);
    EXPECT_EQ(metrics[1].first_step, 10);
    EXPECT_EQ(metrics[1].last_step, 20);
    Open();  // the index is rebuilt from the store
  }
}

TEST_F(RunDataTest, HistogramsReadByStepRangeAndLimitAndListBesideScalars) {
  Open();
  std::vector<v1::Histogram> many;
  for (int s = 0; s < 10; ++s)
    many.push_back(MakeHistogram("h", s * 3, kT0 + s, {0, 1}, {double(s)}));
  WriteHistograms(many);
  WriteRows("h", {{0, kT0}, {1, kT0 + 1}}, false);  // a scalar of the same name
  HistogramReadOptions range;
  range.from_step = 4;
  range.to_step = 15;
  std::vector<int64_t> steps;
  for (const Histogram& h : ReadHistograms("h", range)) steps.push_back(h.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{6, 9, 12, 15}));
  range.limit = 2;
  EXPECT_EQ(ReadHistograms("h", range).size(), 2u);
  auto metrics = engine_->ListMetrics("p", "r");
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_EQ(metrics[0].kind, "scalar");
  EXPECT_EQ(metrics[1].kind, "histogram");
  EXPECT_EQ(metrics[1].count, 10u);

  std::vector<Histogram> out;
  EXPECT_EQ(engine_->ReadHistograms({"p", "r", "nope"}, {}, &out).code(), StatusCode::kNotFound);
  EXPECT_EQ(engine_->ReadHistograms({"p", "nope", "h"}, {}, &out).code(), StatusCode::kNotFound);
}

TEST_F(RunDataTest, DeleteRunAndRetentionDeleteHistograms) {
  Open();
  WriteHistograms(
      {MakeHistogram("h", 1, 1000, {0, 1}, {1}), MakeHistogram("h", 2, 2000, {0, 1}, {1}),
       MakeHistogram("h", 3, 3000, {0, 1}, {1}), MakeHistogram("old", 1, 1000, {0, 1}, {1})});
  WriteHistograms({MakeHistogram("h", 1, 1000, {0, 1}, {1})}, "other");
  Result<uint64_t> deleted = engine_->DeleteHistogramsOlderThan("p", 2500);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 4u);
  EXPECT_EQ(*engine_->DeleteHistogramsOlderThan("elsewhere", 1e12), 0u);
  for (int pass = 0; pass < 2; ++pass) {
    auto metrics = engine_->ListMetrics("p", "r");
    ASSERT_EQ(metrics.size(), 1u) << "'old' had only old histograms";
    EXPECT_EQ(metrics[0].count, 1u);
    EXPECT_EQ(metrics[0].first_step, 3);
    EXPECT_EQ(ReadHistograms("h").size(), 1u);
    Open();
  }
  WriteHistograms({MakeHistogram("h", 9, kT0, {0, 1}, {1})}, "other");
  ASSERT_TRUE(engine_->DeleteRun("p", "r").ok());
  ASSERT_TRUE(engine_->DeleteRun("p", "other").ok());
  // A new run of the same name starts empty, also after a restart.
  WriteHistograms({MakeHistogram("x", 1, kT0, {0, 1}, {1})});
  Open();
  auto metrics = engine_->ListMetrics("p", "r");
  ASSERT_EQ(metrics.size(), 1u);
  EXPECT_EQ(metrics[0].name, "x");
  EXPECT_TRUE(engine_->ListMetrics("p", "other").empty());
}

TEST_F(RunDataTest, GraphIsStoredBesideTheRun) {
  Open();
  WriteRows("loss", {{0, kT0}}, false);
  EXPECT_FALSE(Run().has_graph);
  EXPECT_EQ(engine_->ReadGraph("p", "r").status().code(), StatusCode::kNotFound);
  WriteMetadata([](v1::RunMetadata* m) { m->set_graph_json(R"({"name":"net","children":[]})"); });
  WriteMetadata([](v1::RunMetadata* m) { m->set_graph_json(R"({"name":"net2"})"); });
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_TRUE(Run().has_graph);
    Result<std::string> graph = engine_->ReadGraph("p", "r");
    ASSERT_TRUE(graph.ok());
    EXPECT_EQ(*graph, R"({"name":"net2"})");
    Open();
  }
  EXPECT_EQ(Run().ToJson().dump().find("net2"), std::string::npos)
      << "the graph is not in the run record";
  ASSERT_TRUE(engine_->DeleteRun("p", "r").ok());
  EXPECT_EQ(engine_->ReadGraph("p", "r").status().code(), StatusCode::kNotFound);
}

TEST_F(RunDataTest, HeartbeatsRecordLivenessAndReviveACrashedRun) {
  Open();
  Heartbeat(kT0 + 1, 0.5);
  EXPECT_EQ(Run().last_heartbeat, kT0 + 1);
  EXPECT_EQ(Run().heartbeat_interval, 0.5);
  EXPECT_EQ(Run().status, RunStatus::kRunning);
  WriteMetadata([](v1::RunMetadata* m) {
    m->set_status("crashed");
    m->set_end_time(kT0 + 1);
  });
  EXPECT_EQ(Run().status, RunStatus::kCrashed);
  Heartbeat(kT0 + 9, 2);
  EXPECT_EQ(Run().status, RunStatus::kRunning);
  EXPECT_EQ(Run().end_time, 0);
  EXPECT_EQ(Run().last_heartbeat, kT0 + 9);
  EXPECT_EQ(Run().heartbeat_interval, 2);
  auto listed = engine_->ListHeartbeatRuns();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].last_heartbeat, kT0 + 9);

  WriteMetadata([](v1::RunMetadata* m) {
    m->set_status("finished");
    m->set_end_time(kT0 + 10);
  });
  Heartbeat(kT0 + 20, 1);
  Open();  // persisted in the run record
  EXPECT_EQ(Run().status, RunStatus::kFinished);
  EXPECT_EQ(Run().end_time, kT0 + 10);
  EXPECT_EQ(Run().last_heartbeat, kT0 + 9) << "a finished run ignores heartbeats";
  EXPECT_EQ(Run().heartbeat_interval, 2);
}

TEST_F(RunDataTest, SampledRowsStayOutOfTheRunClockAndKeepTheirTimes) {
  Open(/*chunk_points=*/4);
  std::vector<std::pair<int64_t, double>> training, samples, matching;
  for (int s = 0; s < 8; ++s) training.emplace_back(s, kT0 + s);
  // Samples numbered 0.. like the training steps, at other times, and past the last training step.
  for (int s = 0; s < 12; ++s) samples.emplace_back(s, kT0 + 0.25 + s * 0.5);
  // A sampled series whose times do equal the clock's: it may be sealed without times.
  for (int s = 0; s < 8; ++s) matching.emplace_back(s, kT0 + s);
  WriteRows("loss", training, false);
  WriteRows("system/cpu_percent", samples, true);
  WriteRows("system/matching", matching, true);
  engine_->WaitForSealer();
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Point> clock;
    ASSERT_TRUE(engine_->ReadSeries({"p", "r", kClockMetric}, {}, &clock).ok());
    ASSERT_EQ(clock.size(), 8u) << "sampled rows must not add steps to the clock";
    for (const Point& p : clock) EXPECT_EQ(p.time, kT0 + p.step);
    for (const auto& [metric, rows] :
         {std::pair{"system/cpu_percent", samples}, std::pair{"system/matching", matching}}) {
      std::vector<Point> got;
      ASSERT_TRUE(engine_->ReadSeries({"p", "r", metric}, {}, &got).ok());
      ASSERT_EQ(got.size(), rows.size()) << metric;
      for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(got[i].step, rows[i].first) << metric;
        EXPECT_EQ(Bits(got[i].time), Bits(rows[i].second)) << metric << " step " << got[i].step;
      }
    }
    Open(4);  // sealed chunks, read from the store
  }
}

}  // namespace
}  // namespace trainwatch::storage
