// The Ingestor's checks and defaults for protobuf writes: histograms, graphs, heartbeats.
#include "ingest/ingestor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <limits>

#include "common/testing/temp_dir.h"
#include "storage/engine_test_util.h"

namespace trainwatch::ingest {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

class IngestorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto engine = storage::OpenTestEngine(dir_.path(), {}, clock_, logger_, metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
    ingestor_ = std::make_unique<Ingestor>(*engine_, clock_, IngestLimits{}, metrics_);
  }

  IngestResult Write(v1::WriteRequest request) {
    std::promise<IngestResult> done;
    ingestor_->WriteProto(std::move(request),
                          [&](IngestResult r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  }

  // One batch of run "r" holding one histogram; `edit` spoils it.
  IngestResult WriteHistogram(const std::function<void(v1::Histogram*)>& edit) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_run("r");
    v1::Histogram* ok = batch->add_histograms();
    ok->set_name("fine");
    ok->add_edges(0);
    ok->add_edges(1);
    ok->add_counts(1);
    v1::Histogram* h = batch->add_histograms();
    h->set_name("weights");
    h->set_step(3);
    for (double e : {0.0, 1.0, 2.0}) h->add_edges(e);
    for (double c : {4.0, 5.0}) h->add_counts(c);
    edit(h);
    return Write(std::move(request));
  }

  std::string FirstError(const IngestResult& r) {
    return r.errors.empty() ? "" : r.errors[0].message;
  }

  test::TempDir dir_;
  ManualClock clock_;
  Logger logger_{LogLevel::kWarn};
  MetricsRegistry metrics_;
  std::unique_ptr<storage::Engine> engine_;
  std::unique_ptr<Ingestor> ingestor_;
};

TEST_F(IngestorTest, ValidHistogramsAreStoredWithServerTimeForZero) {
  IngestResult r = WriteHistogram([](v1::Histogram*) {});
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.errors.empty()) << FirstError(r);
  EXPECT_EQ(r.points_accepted, 0u) << "histograms are not points";
  std::vector<storage::Histogram> out;
  ASSERT_TRUE(engine_->ReadHistograms({"default", "r", "weights"}, {}, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].time, clock_.NowUnixSeconds());
  EXPECT_EQ(out[0].counts, (std::vector<double>{4, 5}));
}

TEST_F(IngestorTest, InvalidHistogramRejectsItsBatchNamingTheField) {
  struct Case {
    const char* label;
    std::function<void(v1::Histogram*)> edit;
    const char* error;
  };
  const std::vector<Case> cases = {
      {"empty name", [](v1::Histogram* h) { h->clear_name(); },
       "histograms[1]: histogram name is empty"},
      {"control char", [](v1::Histogram* h) { h->set_name("a\x01"); },
       "histograms[1]: histogram name contains a control"},
      {"negative step", [](v1::Histogram* h) { h->set_step(-1); },
       "histograms[1]: step -1 is negative"},
      {"NaN time", [](v1::Histogram* h) { h->set_time(kNaN); }, "histograms[1]: time"},
      {"negative time", [](v1::Histogram* h) { h->set_time(-1); }, "histograms[1]: time"},
      {"no buckets",
       [](v1::Histogram* h) {
         h->clear_counts();
         h->clear_edges();
         h->add_edges(0);
       },
       "histograms[1]: has 0 buckets"},
      {"edges short", [](v1::Histogram* h) { h->mutable_edges()->RemoveLast(); },
       "histograms[1]: has 2 edges for 2 buckets"},
      {"edge NaN", [](v1::Histogram* h) { h->set_edges(1, kNaN); },
       "histograms[1]: edges[1] is not finite"},
      {"edge Inf", [](v1::Histogram* h) { h->set_edges(2, kInf); },
       "histograms[1]: edges[2] is not finite"},
      {"edges equal", [](v1::Histogram* h) { h->set_edges(1, 0); },
       "histograms[1]: edges are not strictly increasing at edges[1]"},
      {"edges decreasing", [](v1::Histogram* h) { h->set_edges(2, 0.5); },
       "histograms[1]: edges are not strictly increasing at edges[2]"},
      {"count negative", [](v1::Histogram* h) { h->set_counts(1, -1); },
       "histograms[1]: counts[1]"},
      {"count NaN", [](v1::Histogram* h) { h->set_counts(0, kNaN); }, "histograms[1]: counts[0]"},
      {"too many buckets",
       [](v1::Histogram* h) {
         h->clear_edges();
         h->clear_counts();
         for (int i = 0; i <= 10'001; ++i) h->add_edges(i);
         for (int i = 0; i < 10'001; ++i) h->add_counts(1);
       },
       "histograms[1]: has 10001 buckets; 1 to 10000 are allowed"},
  };
  for (const Case& c : cases) {
    IngestResult r = WriteHistogram(c.edit);
    EXPECT_TRUE(r.status.ok()) << c.label;
    ASSERT_EQ(r.errors.size(), 1u) << c.label;
    EXPECT_THAT(FirstError(r), HasSubstr("runs[0] (run 'r'): ")) << c.label;
    EXPECT_THAT(FirstError(r), HasSubstr(c.error)) << c.label;
  }
  EXPECT_FALSE(engine_->GetRun("default", "r").has_value())
      << "nothing of a rejected batch is stored";
}

TEST_F(IngestorTest, HeartbeatIntervalMustBeWithinAnHour) {
  for (double interval : {0.0, -1.0, kNaN, kInf, 3600.5}) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_run("r");
    batch->mutable_heartbeat()->set_interval_seconds(interval);
    IngestResult r = Write(std::move(request));
    EXPECT_THAT(FirstError(r), HasSubstr("heartbeat.interval_seconds must be in (0, 3600]"))
        << interval;
  }
  v1::WriteRequest request;
  v1::RunBatch* batch = request.add_runs();
  batch->set_run("r");
  batch->mutable_heartbeat()->set_interval_seconds(3600);
  batch->mutable_heartbeat()->set_received_time(5);  // a client's value is overwritten
  IngestResult r = Write(std::move(request));
  EXPECT_TRUE(r.errors.empty()) << FirstError(r);
  auto run = engine_->GetRun("default", "r");
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->last_heartbeat, clock_.NowUnixSeconds());
  EXPECT_EQ(run->heartbeat_interval, 3600);
}

TEST_F(IngestorTest, RankMustBeBelowWorldSizeNamingTheField) {
  auto write_rank = [&](uint32_t rank, uint32_t world, uint32_t local, const std::string& host) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_run("r");
    batch->mutable_rank()->set_rank(rank);
    batch->mutable_rank()->set_world_size(world);
    batch->mutable_rank()->set_local_rank(local);
    batch->mutable_rank()->set_host(host);
    batch->add_steps(0);
    v1::MetricColumn* column = batch->add_metrics();
    column->set_name("loss");
    column->add_values(1);
    return Write(std::move(request));
  };
  EXPECT_THAT(FirstError(write_rank(4, 4, 0, "h")),
              HasSubstr("rank.rank (4) must be below rank.world_size (4)"));
  EXPECT_THAT(FirstError(write_rank(1, 4, 4, "h")),
              HasSubstr("rank.local_rank (4) must be below rank.world_size (4)"));
  EXPECT_THAT(FirstError(write_rank(0x80000000u, 0, 0, "h")),
              HasSubstr("rank.rank must be at most"));
  EXPECT_THAT(FirstError(write_rank(1, 4, 0, std::string(300, 'h'))), HasSubstr("rank.host"));
  IngestResult ok = write_rank(3, 4, 1, "node");
  EXPECT_TRUE(ok.errors.empty()) << FirstError(ok);
  EXPECT_EQ(ok.points_accepted, 1u);
  EXPECT_EQ(engine_->ListRanks("default", "r").size(), 1u);
  EXPECT_EQ(engine_->ListRanks("default", "r")[0].host, "node");
}

TEST_F(IngestorTest, RewindStepMustNotBeNegativeAndReportsTheSeriesItCut) {
  auto write = [&](int64_t rewind_step, std::vector<int64_t> steps) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_run("rw");
    batch->mutable_metadata()->set_rewind_step(rewind_step);
    v1::MetricColumn* column = batch->add_metrics();
    column->set_name("loss");
    for (int64_t s : steps) {
      batch->add_steps(s);
      column->add_values(static_cast<double>(s));
    }
    return Write(std::move(request));
  };
  IngestResult refused = write(-1, {0});
  EXPECT_THAT(FirstError(refused), HasSubstr("metadata.rewind_step is negative (-1)"));
  EXPECT_EQ(refused.points_rejected, 1u);
  EXPECT_FALSE(engine_->GetRun("default", "rw").has_value()) << "nothing of the batch is stored";
  IngestResult first = write(5, {0, 1, 2});  // a rewind before the rows: nothing to cut yet
  EXPECT_TRUE(first.errors.empty()) << FirstError(first);
  EXPECT_EQ(first.series_rewound, 0u);
  IngestResult second = write(1, {1});  // hides 1 and 2, then writes 1 again
  EXPECT_EQ(second.series_rewound, 1u);
  std::vector<storage::Point> points;
  ASSERT_TRUE(engine_->ReadSeries({"default", "rw", "loss"}, {}, &points).ok());
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points.back().step, 1);
}

TEST_F(IngestorTest, GraphMustBeAJsonObjectWithinTheLimit) {
  auto write_graph = [&](std::string graph) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_run("g");
    batch->mutable_metadata()->set_graph_json(std::move(graph));
    return Write(std::move(request));
  };
  EXPECT_THAT(FirstError(write_graph("[1,2]")),
              HasSubstr("metadata.graph_json is not a JSON object"));
  EXPECT_THAT(FirstError(write_graph("{\"a\":")),
              HasSubstr("metadata.graph_json: invalid JSON at byte 6"));
  EXPECT_THAT(FirstError(write_graph(std::string(300, '[') + std::string(300, ']'))),
              HasSubstr("metadata.graph_json: JSON nested deeper than 256 levels"));
  std::string big = "{\"pad\":\"" + std::string(IngestLimits{}.max_graph_bytes, 'x') + "\"}";
  EXPECT_THAT(FirstError(write_graph(big)), HasSubstr("the limit is 8388608"));
  EXPECT_FALSE(engine_->GetRun("default", "g").has_value());
  IngestResult r = write_graph(R"({"name":"net","children":[{"name":"fc","type":"Linear"}]})");
  EXPECT_TRUE(r.errors.empty()) << FirstError(r);
  Result<std::string> graph = engine_->ReadGraph("default", "g");
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_THAT(*graph, HasSubstr("Linear"));
}

}  // namespace
}  // namespace trainwatch::ingest
