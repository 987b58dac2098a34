// The client against a real in-process server: delivery, outages, restarts, offline spools and
// `sync`, overflow, system metrics with a fake NVML, heartbeats.
#include "trainwatch/client.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client_core.h"
#include "common/file_system.h"
#include "common/mutex.h"
#include "common/testing/image_test_util.h"
#include "common/testing/temp_dir.h"
#include "server/server.h"
#include "spool_sync.h"
#include "storage/engine.h"

namespace trainwatch {
namespace {

using ::testing::HasSubstr;

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override { PickPorts(); }

  // Starts a server once on free ports and remembers them, so restarts use the same ones.
  void PickPorts() {
    StartServer();
    http_port_ = server_->http_port();
    grpc_port_ = server_->grpc_port();
    StopServer();
  }
  void StartServer() {
    server::ServerConfig config;
    config.data_dir = dir_.Join("data");
    config.listen = {"127.0.0.1", http_port_};
    config.grpc_listen = {"127.0.0.1", grpc_port_};
    config.log_level = LogLevel::kError;
    if (max_body_bytes_ > 0) config.limits.max_body_bytes = max_body_bytes_;
    auto server = server::Server::Start(config);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    // Replaces the server's own listener (live updates, alerting: unused here) with one that wakes
    // AwaitCommitted.
    server_->engine().SetCommitListener(
        [this](const v1::WriteRequest&, const storage::WriteOutcome&) {
          MutexLock lock(commits_mu_);
          ++commits_;
          commits_cv_.notify_all();
        });
  }
  void StopServer() {
    if (server_) {
      ASSERT_TRUE(server_->Shutdown().ok());
    }
    server_.reset();
  }
  ClientOptions Options() {
    ClientOptions o;
    o.server = "http://127.0.0.1:" + std::to_string(http_port_);
    o.spool_dir = dir_.Join("spool");
    o.backoff_initial_seconds = 0.05;
    o.backoff_max_seconds = 0.5;
    o.flush_timeout_seconds = 10;
    o.heartbeat_interval_seconds = 0;
    o.on_warning = [this](WarningKind kind, const std::string& w) {
      MutexLock lock(warnings_mu_);
      warnings_.push_back(w);
      warning_kinds_.push_back(kind);
      warnings_cv_.notify_all();
    };
    return o;
  }
  static RunOptions Quiet(std::string id) {
    RunOptions r;
    r.project = "p";
    r.id = std::move(id);
    r.system_metrics_interval_seconds = 0;
    return r;
  }
  std::vector<storage::Point> Read(const std::string& run, const std::string& metric) {
    std::vector<storage::Point> points;
    Status s = server_->engine().ReadSeries({"p", run, metric}, {}, &points);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return points;
  }
  // Logs steps [from, to) of loss = step and acc = -step.
  static void LogSteps(trainwatch::Run& run, int64_t from, int64_t to) {
    for (int64_t step = from; step < to; ++step) {
      run.Log(step, {{"loss", double(step)}, {"acc", -double(step)}});
    }
  }
  void ExpectExactlySteps(const std::string& run, int64_t n) {
    for (const char* metric : {"loss", "acc"}) {
      auto points = Read(run, metric);
      ASSERT_EQ(points.size(), size_t(n)) << metric;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(points[i].step, i);
        ASSERT_EQ(points[i].value, std::string(metric) == "loss" ? double(i) : -double(i));
      }
    }
    auto metrics = server_->engine().ListMetrics("p", run);
    for (const auto& m : metrics)
      EXPECT_EQ(m.timelines, 1u) << m.name << ": a point was applied twice";
  }
  std::vector<std::string> Warnings() {
    MutexLock lock(warnings_mu_);
    return warnings_;
  }
  // Blocks until `n` warnings of `kind` arrived; false after `seconds`.
  bool AwaitWarnings(WarningKind kind, size_t n, double seconds = 20) {
    MutexLock lock(warnings_mu_);
    return warnings_cv_.wait_for(
        lock.native(), std::chrono::duration<double>(seconds), [&]() TW_REQUIRES(warnings_mu_) {
          return size_t(std::count(warning_kinds_.begin(), warning_kinds_.end(), kind)) >= n;
        });
  }
  // Blocks until `done()` holds, checking it again after each write the server applies; false
  // after `seconds`. `done` runs without the lock (it may read the engine).
  bool AwaitCommitted(const std::function<bool()>& done, double seconds = 20) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      uint64_t seen;
      {
        MutexLock lock(commits_mu_);
        seen = commits_;
      }
      if (done()) return true;
      MutexLock lock(commits_mu_);
      if (!commits_cv_.wait_until(lock.native(), deadline,
                                  [&]() TW_REQUIRES(commits_mu_) { return commits_ != seen; })) {
        return done();
      }
    }
  }
  size_t SeriesSize(const std::string& run, const std::string& metric) {
    std::vector<storage::Point> points;
    (void)server_->engine().ReadSeries({"p", run, metric}, {}, &points);  // not there yet: empty
    return points.size();
  }

  test::TempDir dir_;
  uint16_t http_port_ = 0;
  uint16_t grpc_port_ = 0;
  uint64_t max_body_bytes_ = 0;  // 0: the server's default
  Mutex commits_mu_;             // before server_: its listener uses them until it is gone
  std::condition_variable commits_cv_;
  uint64_t commits_ TW_GUARDED_BY(commits_mu_) = 0;
  std::unique_ptr<server::Server> server_;
  Mutex warnings_mu_;
  std::condition_variable warnings_cv_;
  std::vector<std::string> warnings_ TW_GUARDED_BY(warnings_mu_);
  std::vector<WarningKind> warning_kinds_ TW_GUARDED_BY(warnings_mu_);
};

// Batches the client wrote to its spool (sdk::spooled_hook_for_testing), for tests that wait on it.
struct SpoolWatch {
  static inline Mutex mu;
  static inline std::condition_variable cv;
  static void Notify() {
    MutexLock lock(mu);
    cv.notify_all();
  }
  SpoolWatch() { sdk::spooled_hook_for_testing.store(&Notify); }
  ~SpoolWatch() { sdk::spooled_hook_for_testing.store(nullptr); }
  // Blocks until the client counts spooled points; false after `seconds`.
  bool AwaitSpooled(const Client& client, double seconds = 20) {
    MutexLock lock(mu);
    return cv.wait_for(lock.native(), std::chrono::duration<double>(seconds),
                       [&] { return client.Stats().points_spooled > 0; });
  }
};

TEST_F(ClientTest, DeliversOverGrpcWithMetadataAndFinish) {
  StartServer();
  Client client(Options());
  RunOptions options = Quiet("r1");
  options.name = "first";
  options.tags = {"a"};
  options.config_json = R"({"lr":0.1})";
  auto run = client.StartRun(options);
  LogSteps(*run, 0, 10000);
  run->Finish();
  ASSERT_TRUE(client.Flush(20));
  ExpectExactlySteps("r1", 10000);
  auto info = server_->engine().GetRun("p", "r1");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->name, "first");
  EXPECT_EQ(info->status, storage::RunStatus::kFinished);
  EXPECT_EQ(info->config["lr"], 0.1);
  ClientStats stats = client.Stats();
  EXPECT_EQ(stats.transport, "grpc");
  EXPECT_EQ(stats.points_logged, 20000u);
  EXPECT_EQ(stats.points_acked, 20000u);
  EXPECT_EQ(stats.points_dropped, 0u);
  EXPECT_TRUE(Warnings().empty());
}

// Images logged in one burst must not make a request over the server's body limit (which it would
// refuse whole, and the client would resend forever): batch_max_bytes cuts them into several.
TEST_F(ClientTest, ABurstOfImagesIsSplitBelowTheServersRequestLimit) {
  max_body_bytes_ = 1 << 20;
  StartServer();
  ClientOptions o = Options();
  o.batch_max_bytes = 256 << 10;
  Client client(o);
  auto run = client.StartRun(Quiet("images"));
  constexpr int kImages = 12;  // ~2.4 MB in all: more than twice the server's limit
  for (int i = 0; i < kImages; ++i) {
    std::string png = test_images::Png(64, 64, 8, 2, static_cast<uint8_t>(i));
    png.append(200 << 10, static_cast<char>(i));  // past IEND: the server reads the header only
    run->LogImage(i, "samples", std::move(png), "burst");
  }
  run->Log(kImages, {{"loss", 1.0}});
  ASSERT_TRUE(client.Flush(20));
  std::vector<storage::ImageEntry> images;
  ASSERT_TRUE(server_->engine().ReadImages("p", "images", {}, &images).ok());
  ASSERT_EQ(images.size(), size_t(kImages));
  for (int i = 0; i < kImages; ++i) EXPECT_EQ(images[i].step, i);
  EXPECT_EQ(Read("images", "loss").size(), 1u);
  EXPECT_EQ(client.Stats().reconnects, 0u);
  EXPECT_TRUE(Warnings().empty());
}

TEST_F(ClientTest, DeliversOverHttp) {
  StartServer();
  ClientOptions o = Options();
  o.transport = Transport::kHttp;
  Client client(o);
  auto run = client.StartRun(Quiet("h"));
  LogSteps(*run, 0, 3000);
  ASSERT_TRUE(client.Flush(20));
  EXPECT_EQ(client.Stats().transport, "http");
  ExpectExactlySteps("h", 3000);
}

TEST_F(ClientTest, ServerDownAtStartThenRestartedMidRunEveryPointArrivesOnce) {
  SpoolWatch spooled;
  Client client(Options());
  auto run = client.StartRun(Quiet("outage"));
  LogSteps(*run, 0, 2000);  // nobody listening
  ASSERT_TRUE(spooled.AwaitSpooled(client)) << "the client cut no batch to its spool";
  EXPECT_FALSE(client.Stats().connected);
  EXPECT_GT(client.Stats().points_spooled, 0u);
  StartServer();
  LogSteps(*run, 2000, 4000);
  ASSERT_TRUE(client.Flush(20));
  StopServer();  // a restart in the middle of the run
  LogSteps(*run, 4000, 6000);
  // The client noticed this second outage (it warns once per outage), so the restart reconnects.
  ASSERT_TRUE(AwaitWarnings(WarningKind::kServerUnreachable, 2));
  StartServer();
  LogSteps(*run, 6000, 8000);
  ASSERT_TRUE(client.Flush(20));
  ExpectExactlySteps("outage", 8000);
  EXPECT_GE(client.Stats().reconnects, 2u);
  auto warnings = Warnings();
  ASSERT_FALSE(warnings.empty());
  EXPECT_THAT(warnings[0], HasSubstr("cannot reach the trainwatch server"));
}

TEST_F(ClientTest, OfflineSpoolIsUploadedBySyncExactlyOnce) {
  ClientOptions o = Options();
  o.mode = Mode::kOffline;
  std::string spool;
  {
    Client client(o);
    spool = client.spool_path();
    auto run = client.StartRun(Quiet("offline"));
    LogSteps(*run, 0, 5000);
    run->Finish();
  }
  ASSERT_TRUE(PosixFileSystem().Exists(spool));
  // A copy of the spool, to sync a second time later (as if someone ran sync twice).
  std::string copy = dir_.Join("copy/" + spool.substr(spool.rfind('/') + 1));
  ASSERT_TRUE(PosixFileSystem().CreateDirs(copy).ok());
  auto names = PosixFileSystem().ListDir(spool);
  ASSERT_TRUE(names.ok());
  for (const std::string& name : names.value()) {
    ASSERT_TRUE(WriteFileAtomic(PosixFileSystem(), copy + "/" + name,
                                *PosixFileSystem().ReadFile(spool + "/" + name))
                    .ok());
  }
  StartServer();
  std::vector<std::string> lines;
  auto report = sdk::SyncSpool(dir_.Join("spool"), Options(), 20,
                               [&](const std::string& l) { lines.push_back(l); });
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->writers, 1);
  EXPECT_EQ(report->writers_complete, 1);
  EXPECT_EQ(report->points_acked, 10000u);
  EXPECT_FALSE(PosixFileSystem().Exists(spool)) << "a delivered spool is removed";
  ExpectExactlySteps("offline", 5000);
  EXPECT_EQ(server_->engine().GetRun("p", "offline")->status, storage::RunStatus::kFinished);

  auto again = sdk::SyncSpool(dir_.Join("copy"), Options(), 20, [](const std::string&) {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->batches_duplicate, again->batches_acked) << "every batch was already applied";
  ExpectExactlySteps("offline", 5000);
}

TEST_F(ClientTest, ExitWhileTheServerIsAwayLeavesASpoolThatSyncDelivers) {
  std::string spool;
  auto closing = std::chrono::steady_clock::now();
  {
    ClientOptions o = Options();
    o.flush_timeout_seconds = 30;
    Client client(o);
    spool = client.spool_path();
    auto run = client.StartRun(Quiet("left"));
    LogSteps(*run, 0, 1000);
    // A connection attempt failed: the client knows the server is away.
    ASSERT_TRUE(AwaitWarnings(WarningKind::kServerUnreachable, 1));
    closing = std::chrono::steady_clock::now();
  }
  // With the server known to be away, closing waits for one more connection attempt, not for the
  // whole flush timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - closing, std::chrono::seconds(15));
  auto warnings = Warnings();
  ASSERT_FALSE(warnings.empty());
  EXPECT_THAT(warnings.back(), HasSubstr("trainwatch sync " + spool));
  StartServer();
  auto report = sdk::SyncSpool(spool, Options(), 20, [](const std::string&) {});
  ASSERT_TRUE(report.ok());
  ExpectExactlySteps("left", 1000);
}

TEST_F(ClientTest, FullBufferDropsOldestAndCountsIt) {
  ClientOptions o = Options();
  o.mode = Mode::kOffline;
  o.buffer_records = 64;
  o.spool_max_bytes = 64 << 10;
  Client client(o);
  auto run = client.StartRun(Quiet("drops"));
  LogSteps(*run, 0, 200000);
  ASSERT_TRUE(client.Flush(20));
  ClientStats stats = client.Stats();
  EXPECT_EQ(stats.points_logged, 400000u);
  EXPECT_GT(stats.points_dropped, 0u);
  EXPECT_LE(stats.spool_bytes, o.spool_max_bytes);
  EXPECT_THAT(Warnings(), testing::Contains(HasSubstr("dropped")));
}

// The warning callback may log, also when the buffer is full: the client calls it with none of its
// locks held (it once held one that Log takes on a full buffer, and the reader thread deadlocked).
TEST_F(ClientTest, AWarningCallbackMayLogWhileTheBufferIsFull) {
  StartServer();
  ClientOptions o = Options();
  o.buffer_records = 16;
  std::atomic<trainwatch::Run*> logger{nullptr};
  std::promise<void> logged;
  o.on_warning = [&, record = o.on_warning](WarningKind kind, const std::string& w) {
    record(kind, w);
    trainwatch::Run* run =
        kind == WarningKind::kPointsRejected ? logger.exchange(nullptr) : nullptr;
    if (!run) return;
    LogSteps(*run, 0, 1000);  // far more than the buffer holds: Log drops and warns
    logged.set_value();
  };
  Client client(o);
  auto bad = client.StartRun(Quiet("bad"));
  auto good = client.StartRun(Quiet("good"));
  logger.store(good.get());
  bad->Log(-1, {{"loss", 1.0}});  // refused by the server: a warning on the client's reader thread
  ASSERT_EQ(logged.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "the warning callback did not finish logging";
  ASSERT_TRUE(client.Flush(20));
  ClientStats stats = client.Stats();
  EXPECT_EQ(stats.points_logged, 2001u);  // the refused point, and 1000 steps of two metrics
  EXPECT_EQ(stats.points_acked + stats.points_dropped, stats.points_logged);
  EXPECT_THAT(Warnings(), testing::Contains(HasSubstr("rejected part of a batch")));
}

TEST_F(ClientTest, SystemMetricsIncludeFakeGpus) {
  StartServer();
  Client client(Options());
  RunOptions r = Quiet("sys");
  r.system_metrics_interval_seconds = 0.05;
  r.nvml_library = FAKE_NVML_PATH;
  auto run = client.StartRun(r);
  LogSteps(*run, 0, 3);
  ASSERT_TRUE(AwaitCommitted([&] {
    return SeriesSize("sys", "system/gpu/1/utilization_percent") >= 2;
  })) << "fewer than two system samples arrived";
  run->Finish();
  ASSERT_TRUE(client.Flush(20));
  auto util = Read("sys", "system/gpu/1/utilization_percent");
  ASSERT_GE(util.size(), 2u);
  EXPECT_EQ(util.back().value, 15.0);  // the fake reports 10 * i + 5
  EXPECT_GE(Read("sys", "system/process_rss_bytes").back().value, 1e6);
  ExpectExactlySteps("sys", 3);  // samples did not disturb the training steps
}

// The run batches the server applied, as its commit listener saw them. Shared with the listener,
// which the server may call until it stops (after the test's locals are gone).
struct SeenBatches {
  Mutex mu;
  std::vector<v1::RunBatch> batches TW_GUARDED_BY(mu);
  std::vector<v1::RunBatch> Of(const std::string& run) {
    MutexLock lock(mu);
    std::vector<v1::RunBatch> of;
    for (const v1::RunBatch& b : batches) {
      if (b.run() == run) of.push_back(b);
    }
    return of;
  }
};

TEST_F(ClientTest, EveryBatchOfARankCarriesItsRankAndOnlyRankZeroSendsRunMetadata) {
  StartServer();
  auto seen = std::make_shared<SeenBatches>();
  server_->engine().SetCommitListener(
      [this, seen](const v1::WriteRequest& request, const storage::WriteOutcome&) {
        {
          MutexLock lock(seen->mu);
          for (const v1::RunBatch& b : request.runs()) seen->batches.push_back(b);
        }
        MutexLock lock(commits_mu_);
        ++commits_;
        commits_cv_.notify_all();
      });
  ClientOptions o = Options();
  o.heartbeat_interval_seconds = 0.05;
  Client client(o);
  auto start = [&](int rank, uint32_t local_rank) {
    RunOptions r = Quiet("dist");
    r.name = "job";
    r.tags = {"t"};
    r.config_json = R"({"lr":0.1})";
    r.rank = {.rank = rank, .world_size = 4, .local_rank = local_rank, .host = "node-b"};
    r.system_metrics_interval_seconds = 0.05;
    r.nvml_library = FAKE_NVML_PATH;
    r.machine_metrics = local_rank == 0;
    r.gpu_index = static_cast<int>(local_rank);
    return client.StartRun(r);
  };
  auto rank2 = start(2, 1);
  auto rank0 = start(0, 0);
  for (trainwatch::Run* run : {rank2.get(), rank0.get()}) {
    LogSteps(*run, 0, 5);
    run->LogHistogram(4, "h", {{0, 1}, {3}});
    run->LogText(4, "note", "hello");
    run->SetConfig(R"({"batch":32})");
    run->SetTags({"more"});
    run->SetGraph(R"({"name":""})");
  }
  auto kinds_of = [&](int rank) {
    std::set<std::string> kinds;
    for (const v1::RunBatch& b : seen->Of("dist")) {
      if (!b.has_rank() || static_cast<int>(b.rank().rank()) != rank) continue;
      if (b.has_heartbeat()) kinds.insert("heartbeat");
      if (b.sampled()) kinds.insert("sampled");
      if (!b.sampled() && b.steps_size() > 0) kinds.insert("rows");
    }
    return kinds;
  };
  ASSERT_TRUE(AwaitCommitted([&] { return kinds_of(2).size() == 3 && kinds_of(0).size() == 3; }))
      << "rows, system samples and heartbeats of both ranks did not all arrive";
  rank2->Finish("crashed");
  rank0->Finish();
  ASSERT_TRUE(client.Flush(20));

  std::vector<v1::RunBatch> batches = seen->Of("dist");
  std::set<std::string> rank2_sampled, rank0_sampled;
  int rank2_statuses = 0;
  for (const v1::RunBatch& b : batches) {
    ASSERT_TRUE(b.has_rank()) << b.ShortDebugString();
    const uint32_t rank = b.rank().rank();
    ASSERT_TRUE(rank == 0 || rank == 2) << b.ShortDebugString();
    EXPECT_EQ(b.rank().world_size(), 4u);
    EXPECT_EQ(b.rank().local_rank(), rank == 2 ? 1u : 0u);
    EXPECT_EQ(b.rank().host(), "node-b");
    for (const v1::MetricColumn& c : b.metrics()) {
      if (b.sampled()) (rank == 2 ? rank2_sampled : rank0_sampled).insert(c.name());
    }
    if (rank != 2) continue;
    // Rank 2 leaves the run's metadata (name, tags, config, graph, start time) to rank 0.
    if (b.has_metadata()) {
      const v1::RunMetadata& m = b.metadata();
      EXPECT_EQ(m.name(), "");
      EXPECT_EQ(m.tags_size(), 0);
      EXPECT_EQ(m.config_json(), "");
      EXPECT_EQ(m.graph_json(), "");
      EXPECT_EQ(m.start_time(), 0);
      EXPECT_TRUE(m.status() == "running" || m.status() == "crashed") << m.status();
      ++rank2_statuses;
    }
  }
  EXPECT_EQ(rank2_statuses, 2);  // running at the start, its finish
  // Each rank samples its own GPU under one name; the machine's series come from local rank 0.
  EXPECT_TRUE(rank2_sampled.count("system/gpu/utilization_percent"));
  EXPECT_TRUE(rank2_sampled.count("system/process_rss_bytes"));
  EXPECT_FALSE(rank2_sampled.count("system/memory_percent"));
  EXPECT_FALSE(rank2_sampled.count("system/gpu/1/utilization_percent"));
  EXPECT_TRUE(rank0_sampled.count("system/memory_percent"));
  EXPECT_TRUE(rank0_sampled.count("system/gpu/utilization_percent"));
  // Rank 0's metadata, histograms and texts went out with its rank too.
  auto info = server_->engine().GetRun("p", "dist");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->name, "job");
  EXPECT_EQ(info->config["lr"], 0.1);
  EXPECT_EQ(info->config["batch"], 32);
  int histograms = 0, texts = 0;
  for (const v1::RunBatch& b : batches) {
    histograms += b.histograms_size();
    texts += b.texts_size();
  }
  EXPECT_EQ(histograms, 2);
  EXPECT_EQ(texts, 2);
  StopServer();  // before `seen`'s other owners go
}

TEST_F(ClientTest, HeartbeatsStopWhenTheRunIsDroppedAndTheServerMarksItCrashed) {
  StartServer();
  ClientOptions o = Options();
  o.heartbeat_interval_seconds = 0.2;
  Client client(o);
  {
    auto run = client.StartRun(Quiet("dead"));
    LogSteps(*run, 0, 10);
    ASSERT_TRUE(AwaitCommitted([&] {
      auto info = server_->engine().GetRun("p", "dead");
      return info.has_value() && info->heartbeat_interval > 0;
    })) << "no heartbeat arrived";
    ASSERT_TRUE(client.Flush(20));
    EXPECT_EQ(server_->engine().GetRun("p", "dead")->status, storage::RunStatus::kRunning);
  }  // dropped without Finish: heartbeats stop
  // The server's liveness sweep writes the "crashed" status like any other write.
  AwaitCommitted(
      [&] { return server_->engine().GetRun("p", "dead")->status == storage::RunStatus::kCrashed; },
      10);
  EXPECT_EQ(server_->engine().GetRun("p", "dead")->status, storage::RunStatus::kCrashed);
}

}  // namespace
}  // namespace trainwatch
