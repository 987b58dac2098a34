// Checkpoints and the write-ahead log: a checkpoint with no newer writes leaves no byte of a
// covered record in the log (its last segment is retired), and a process killed after it (no
// shutdown checkpoint) recovers every point, with LSNs that go on from where they were.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "common/file_system.h"
#include "common/testing/fault_injection_fs.h"
#include "common/testing/temp_dir.h"
#include "storage/engine.h"
#include "storage/engine_test_util.h"
#include "storage/wal/wal_format.h"

namespace trainwatch::storage {
namespace {

using Rows = std::vector<std::pair<int64_t, double>>;

class EngineCheckpointTest : public ::testing::Test {
 protected:
  void Open() {
    engine_.reset();
    auto engine = OpenTestEngine(dir_.path(), EngineOptions{}, clock_, logger_, metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
  }

  void Write(const std::string& metric, int64_t from, int64_t to) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run("r");
    v1::MetricColumn* column = batch->add_metrics();
    column->set_name(metric);
    for (int64_t s = from; s < to; ++s) {
      batch->add_steps(s);
      batch->add_times(1767225600.0 + s);
      column->add_values(static_cast<double>(s) * 0.5);
    }
    WriteAndWait(*engine_, std::move(request));
  }

  Rows Read(const std::string& metric) {
    std::vector<Point> points;
    Status s = engine_->ReadSeries({"p", "r", metric}, {}, &points);
    EXPECT_TRUE(s.ok()) << s.ToString();
    Rows out;
    for (const Point& p : points) out.emplace_back(p.step, p.value);
    return out;
  }

  static Rows Expected(int64_t from, int64_t to) {
    Rows out;
    for (int64_t s = from; s < to; ++s) out.emplace_back(s, static_cast<double>(s) * 0.5);
    return out;
  }

  // The WAL's segment files: name -> size.
  std::vector<std::pair<std::string, uint64_t>> WalFiles() {
    FileSystem& fs = PosixFileSystem();
    const std::string wal = dir_.path() + "/wal";
    auto names = fs.ListDir(wal);
    EXPECT_TRUE(names.ok());
    std::vector<std::pair<std::string, uint64_t>> out;
    for (const std::string& name : *names) {
      if (wal::ParseSegmentFileName(name)) out.emplace_back(name, *fs.FileSize(wal + "/" + name));
    }
    return out;
  }

  // Runs `body` in a child process that then dies without closing the engine (kill -9 style).
  void InChildThenKill(const std::function<void()>& body) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      body();
      _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's own checks failed";
  }

  test::TempDir dir_;
  ManualClock clock_;
  Logger logger_{LogLevel::kWarn};
  MetricsRegistry metrics_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineCheckpointTest, ACheckpointWithNoNewerWritesLeavesNoWalBytesAndAKillLosesNothing) {
  InChildThenKill([&] {
    Open();
    Write("loss", 0, 1000);
    Write("acc", 0, 10);
    EXPECT_GT(engine_->LogDiskBytes(), 0u);
    ASSERT_TRUE(engine_->Checkpoint().ok());
    // Only the empty segment named after the next LSN is left.
    auto files = WalFiles();
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files[0].second, 0u) << files[0].first;
    EXPECT_EQ(engine_->LogDiskBytes(), 0u);
  });
  // The killed process's data is all in the store; the LSNs go on after the checkpoint's.
  InChildThenKill([&] {
    Open();
    EXPECT_EQ(Read("loss"), Expected(0, 1000));
    EXPECT_EQ(Read("acc"), Expected(0, 10));
    Write("loss", 1000, 1010);  // in the log only: a kill before the next checkpoint
  });
  Open();
  EXPECT_EQ(Read("loss"), Expected(0, 1010)) << "points written after the retirement were replayed";
  EXPECT_EQ(Read("acc"), Expected(0, 10));
}

// A stopped engine (its last checkpoint comes after the log's Close) leaves no WAL bytes either:
// a server at rest keeps its data in the store alone.
TEST_F(EngineCheckpointTest, ACleanCloseLeavesNoWalBytes) {
  Open();
  Write("loss", 0, 1000);
  EXPECT_GT(engine_->LogDiskBytes(), 0u);
  ASSERT_TRUE(engine_->Close().ok());
  auto files = WalFiles();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].second, 0u) << files[0].first;
  Open();
  EXPECT_EQ(Read("loss"), Expected(0, 1000));
  Write("loss", 1000, 1010);
  Open();  // the destructor closes it again
  EXPECT_EQ(Read("loss"), Expected(0, 1010));
}

// A write error stops the log (fail-stop, docs/format/wal.md): the engine says so, with the
// reason, for /healthz to answer 503.
TEST(EngineLogHealthTest, AWalWriteErrorIsReportedAsTheLogsHealth) {
  test::TempDir dir;
  test::FaultInjectionFileSystem fs(PosixFileSystem());
  ManualClock clock;
  Logger logger{LogLevel::kError};
  MetricsRegistry metrics;
  auto wal = wal::WalLog::Open(fs, dir.path() + "/wal");
  ASSERT_TRUE(wal.ok());
  auto store = ChunkStore::Open(dir.path() + "/store");
  ASSERT_TRUE(store.ok());
  auto engine =
      Engine::Open(EngineOptions{}, std::move(*wal), std::move(*store), clock, logger, metrics);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  EXPECT_TRUE((*engine)->LogHealth().ok());
  fs.SetWriteError(Status::ResourceExhausted("injected: no space left on device"));
  v1::WriteRequest request;
  v1::RunBatch* batch = request.add_runs();
  batch->set_run("r");
  batch->add_steps(0);
  v1::MetricColumn* column = batch->add_metrics();
  column->set_name("loss");
  column->add_values(1);
  std::promise<Status> done;
  (*engine)->Write(std::move(request),
                   [&](const Status& s, const WriteOutcome&) { done.set_value(s); });
  EXPECT_FALSE(done.get_future().get().ok());
  Status health = (*engine)->LogHealth();
  EXPECT_FALSE(health.ok());
  EXPECT_NE(health.ToString().find("no space left on device"), std::string::npos)
      << health.ToString();
  fs.SetWriteError(Status::Ok());
}

}  // namespace
}  // namespace trainwatch::storage
