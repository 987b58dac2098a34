// Crash tests over the whole storage stack: the engine writes acknowledged batches through the
// write-ahead log (on FaultInjectionFileSystem) and seals, checkpoints and truncates into the
// RocksDB store (on FaultInjectionRocksFs), with thresholds small enough that every stage runs in
// every lifetime; then the power is cut, dropping what was not synced in both (or tearing it),
// and the next lifetime reopens with no manual step. No acknowledged point may be lost, none may
// be doubled, and every point read back has the value written at its step.
//
// Each lifetime is seeded: the crash point, the checkpoints and torn writes come from the seed.
// The engine's and RocksDB's threads race the crash, so the bytes cut differ between runs; the
// assertions hold for every interleaving.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <rocksdb/env.h>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/mutex.h"
#include "common/testing/fault_injection_fs.h"
#include "common/testing/image_test_util.h"
#include "common/testing/temp_dir.h"
#include "storage/engine.h"
#include "storage/rocksdb_fault_injection_fs.h"
#include "storage/wal/wal_log.h"

namespace trainwatch::storage {
namespace {

constexpr int kMetrics = 3;
constexpr int kStepsPerBatch = 4;
const std::string kWriter = "crash-test-writer";

std::string MetricName(int m) { return "m" + std::to_string(m); }
// The value written at `step` of metric m: a re-sent batch writes the same, so a point read back
// with another value was mixed up, not merely re-sent.
double ValueAt(int m, int64_t step) { return static_cast<double>(step) * 10 + m; }

// Batch `seq` (1-based) holds steps [(seq-1)*kStepsPerBatch, seq*kStepsPerBatch) of every metric.
v1::WriteRequest Batch(uint64_t seq) {
  v1::WriteRequest request;
  request.set_writer_id(kWriter);
  request.set_sequence(seq);
  v1::RunBatch* batch = request.add_runs();
  batch->set_project("p");
  batch->set_run("r");
  const int64_t first = static_cast<int64_t>(seq - 1) * kStepsPerBatch;
  for (int64_t s = first; s < first + kStepsPerBatch; ++s) {
    batch->add_steps(s);
    batch->add_times(1767225600.0 + static_cast<double>(s));
  }
  for (int m = 0; m < kMetrics; ++m) {
    v1::MetricColumn* column = batch->add_metrics();
    column->set_name(MetricName(m));
    for (int64_t s = first; s < first + kStepsPerBatch; ++s) column->add_values(ValueAt(m, s));
  }
  return request;
}

// What the "client" knows across lifetimes, as the SDK's spool would.
struct History {
  Mutex mu;
  std::set<uint64_t> acknowledged TW_GUARDED_BY(mu);
  uint64_t next_seq = 1;             // the next batch never sent
  uint64_t lost_unacknowledged = 0;  // batches sent, not acknowledged, absent after the crash
  uint64_t checkpoints = 0;
  uint64_t crashes_mid_write = 0;
};

class EngineCrashTest : public ::testing::Test {
 protected:
  EngineCrashTest()
      : wal_fs_(PosixFileSystem(), trainwatch::test::FaultInjectionFileSystem::Syncs::kSimulated),
        rocks_fs_(std::make_shared<test::FaultInjectionRocksFs>()),
        rocks_env_(rocksdb::NewCompositeEnv(rocks_fs_)) {}

  // Opens the engine over both fault-injecting file systems; every threshold is small.
  std::unique_ptr<Engine> Open(MetricsRegistry& metrics) {
    wal::WalOptions wal_options;
    wal_options.segment_bytes = 2048;  // segment rolls and new files every few batches
    auto wal = wal::WalLog::Open(wal_fs_, dir_.Join("wal"), wal_options);
    EXPECT_TRUE(wal.ok()) << wal.status().ToString();
    if (!wal.ok()) return nullptr;
    ChunkStoreOptions store_options;
    store_options.env = rocks_env_.get();
    store_options.write_buffer_bytes = 16 << 10;  // memtable flushes: SSTs, MANIFEST, CURRENT
    auto store = ChunkStore::Open(dir_.Join("store"), store_options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    if (!store.ok()) return nullptr;
    EngineOptions options;
    options.chunk_points = 8;             // a seal every other batch
    options.checkpoint_log_bytes = 3000;  // a checkpoint (and WAL truncation) every few batches
    options.checkpoint_interval_seconds = 1e9;  // the manual clock never gets there
    auto engine = Engine::Open(options, std::move(wal).value(), std::move(store).value(), clock_,
                               logger_, metrics);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    return engine.ok() ? std::move(engine).value() : nullptr;
  }

  // Every acknowledged batch is there once, every batch there was sent, values are right.
  // Returns the sequences found.
  std::set<uint64_t> Verify(Engine& engine, History& history) {
    std::set<uint64_t> found;
    for (int m = 0; m < kMetrics; ++m) {
      std::vector<Point> points;
      Status s = engine.ReadSeries({"p", "r", MetricName(m)}, {}, &points);
      if (s.code() == StatusCode::kNotFound) continue;
      EXPECT_TRUE(s.ok()) << s.ToString();
      int64_t last = -1;
      for (const Point& p : points) {
        EXPECT_GT(p.step, last) << MetricName(m) << ": a step twice or out of order";
        last = p.step;
        EXPECT_EQ(p.value, ValueAt(m, p.step)) << MetricName(m) << " step " << p.step;
        found.insert(static_cast<uint64_t>(p.step / kStepsPerBatch) + 1);
      }
      // A batch is written as a whole: every step of it, in every metric, or none.
      std::set<uint64_t> in_metric;
      for (const Point& p : points)
        in_metric.insert(static_cast<uint64_t>(p.step / kStepsPerBatch) + 1);
      EXPECT_EQ(points.size(), in_metric.size() * kStepsPerBatch)
          << MetricName(m) << ": a partial batch";
    }
    MutexLock lock(history.mu);
    for (uint64_t seq : history.acknowledged) {
      EXPECT_TRUE(found.count(seq)) << "acknowledged batch " << seq << " lost";
    }
    for (uint64_t seq : found) EXPECT_LT(seq, history.next_seq) << "batch " << seq << " never sent";
    return found;
  }

  // One lifetime: reopen, verify, re-send what was sent but is missing (as the SDK's spool does),
  // write new batches with a few in flight, checkpoint now and then, and cut the power at a
  // seeded moment.
  void Lifetime(int lifetime, History& history) {
    SCOPED_TRACE("lifetime " + std::to_string(lifetime));
    std::mt19937_64 rng(static_cast<uint64_t>(lifetime) * 7919 + 17);
    MetricsRegistry metrics;
    std::unique_ptr<Engine> engine = Open(metrics);
    ASSERT_NE(engine, nullptr);
    std::set<uint64_t> found = Verify(*engine, history);
    ASSERT_FALSE(HasFailure());

    std::vector<uint64_t> to_send;
    for (uint64_t seq = 1; seq < history.next_seq; ++seq) {
      if (!found.count(seq)) {
        to_send.push_back(seq);
        ++history.lost_unacknowledged;
      }
    }
    const size_t fresh = 4 + rng() % 24;
    for (size_t i = 0; i < fresh; ++i) to_send.push_back(history.next_seq++);

    const size_t crash_at = rng() % (to_send.size() + 1);  // batches handed over before the cut
    const size_t in_flight = 1 + rng() % 4;
    Mutex mu;
    std::condition_variable cv;
    size_t outstanding = 0;  // guarded by mu
    for (size_t i = 0; i < crash_at; ++i) {
      {
        MutexLock lock(mu);
        cv.wait(lock.native(), [&] { return outstanding < in_flight; });
        ++outstanding;
      }
      const uint64_t seq = to_send[i];
      engine->Write(Batch(seq), [&, seq](const Status& s, const WriteOutcome&) {
        if (s.ok()) {
          MutexLock lock(history.mu);
          history.acknowledged.insert(seq);
        }
        MutexLock lock(mu);
        --outstanding;
        cv.notify_all();
      });
      if (rng() % 8 == 0) {
        Status s = engine->Checkpoint();
        EXPECT_TRUE(s.ok()) << s.ToString();
        ++history.checkpoints;
      }
    }
    {
      MutexLock lock(mu);
      if (outstanding > 0) ++history.crashes_mid_write;
    }
    // The power cut, in both file systems. The log's goes first: anything the store does after
    // it follows a log operation that completed before it, as in one instantaneous cut.
    const bool torn = lifetime % 2 == 1;
    Status wal_crash = torn ? wal_fs_.CrashWithTornWrites(rng()) : wal_fs_.Crash();
    ASSERT_TRUE(wal_crash.ok()) << wal_crash.ToString();
    rocksdb::IOStatus rocks_crash =
        torn ? rocks_fs_->CrashWithTornWrites(rng()) : rocks_fs_->Crash();
    ASSERT_TRUE(rocks_crash.ok()) << rocks_crash.ToString();
    engine.reset();  // the dead process's threads stop; every write of theirs fails
    {
      MutexLock lock(mu);
      cv.wait(lock.native(), [&] { return outstanding == 0; });
    }
    wal_fs_.Restart();
    rocks_fs_->Restart();
  }

  trainwatch::test::TempDir dir_;
  trainwatch::test::FaultInjectionFileSystem wal_fs_;
  std::shared_ptr<test::FaultInjectionRocksFs> rocks_fs_;
  std::unique_ptr<rocksdb::Env> rocks_env_;
  ManualClock clock_;
  Logger logger_{LogLevel::kError};
};

TEST_F(EngineCrashTest, NoAcknowledgedPointIsLostOrDoubledOverManyLifetimes) {
  History history;
  constexpr int kLifetimes = 100;
  for (int lifetime = 0; lifetime < kLifetimes && !HasFatalFailure(); ++lifetime) {
    Lifetime(lifetime, history);
  }
  // The last crash, recovered once more.
  MetricsRegistry metrics;
  std::unique_ptr<Engine> engine = Open(metrics);
  ASSERT_NE(engine, nullptr);
  Verify(*engine, history);
  MutexLock lock(history.mu);
  // The workload did what it is meant to: many acknowledged batches, checkpoints, cuts with
  // writes in flight.
  EXPECT_GT(history.acknowledged.size(), 400u);
  EXPECT_GT(history.checkpoints, 40u);
  EXPECT_GT(history.crashes_mid_write, 20u);
  std::printf(
      "crash test: %d lifetimes, %zu batches acknowledged, %llu explicit checkpoints, "
      "%llu crashes with writes in flight, %llu unacknowledged batches lost and re-sent\n",
      kLifetimes, history.acknowledged.size(), static_cast<unsigned long long>(history.checkpoints),
      static_cast<unsigned long long>(history.crashes_mid_write),
      static_cast<unsigned long long>(history.lost_unacknowledged));
}

}  // namespace
}  // namespace trainwatch::storage

namespace trainwatch::storage {
namespace {

// ENOSPC and EIO under the engine: the write-ahead log (refused with a clear code, resumes on the
// clock once the disk takes writes again) and the store (seals retried and refused writes kept,
// checkpoints refused meanwhile, the store recovered in the process once the disk is back);
// nothing acknowledged is lost, nothing doubled, no restart needed.
class EngineDiskFaultTest : public ::testing::Test {
 public:
  EngineDiskFaultTest()
      : wal_fs_(PosixFileSystem()),
        rocks_fs_(std::make_shared<test::FaultInjectionRocksFs>()),
        rocks_env_(rocksdb::NewCompositeEnv(rocks_fs_)) {}

  void Open() {
    engine_.reset();
    wal::WalOptions wal_options;
    wal_options.retry_clock = &clock_;
    wal_options.retry_seconds = 1;
    auto wal = wal::WalLog::Open(wal_fs_, dir_.Join("wal"), wal_options);
    ASSERT_TRUE(wal.ok()) << wal.status().ToString();
    ChunkStoreOptions store_options;
    store_options.env = rocks_env_.get();
    auto store = ChunkStore::Open(dir_.Join("store"), store_options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EngineOptions options;
    options.chunk_points = 8;
    options.checkpoint_interval_seconds = 1e9;
    options.store_retry_seconds = 1;
    auto engine = Engine::Open(options, std::move(wal).value(), std::move(store).value(), clock_,
                               logger_, metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
  }

  Status Write(uint64_t seq) { return Write(Batch(seq)); }
  Status Write(const v1::WriteRequest& request) {
    std::promise<Status> done;
    engine_->Write(request, [&](const Status& s, const WriteOutcome&) { done.set_value(s); });
    return done.get_future().get();
  }
  // Renames run p/r (a run record the store must write).
  Status Rename(const std::string& name) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run("r");
    batch->mutable_metadata()->set_name(name);
    return Write(request);
  }
  std::string RunName() {
    std::optional<RunInfo> run = engine_->GetRun("p", "r");
    return run ? run->name : "";
  }

  // Every step of batches [1, last] once, with its value, in every metric.
  void ExpectBatches(uint64_t last) {
    for (int m = 0; m < kMetrics; ++m) {
      std::vector<Point> points;
      Status s = engine_->ReadSeries({"p", "r", MetricName(m)}, {}, &points);
      ASSERT_TRUE(s.ok()) << s.ToString();
      ASSERT_EQ(points.size(), last * kStepsPerBatch) << MetricName(m);
      for (size_t i = 0; i < points.size(); ++i) {
        EXPECT_EQ(points[i].step, static_cast<int64_t>(i));
        EXPECT_EQ(points[i].value, ValueAt(m, points[i].step));
      }
    }
  }

  trainwatch::test::TempDir dir_;
  trainwatch::test::FaultInjectionFileSystem wal_fs_;
  std::shared_ptr<test::FaultInjectionRocksFs> rocks_fs_;
  std::unique_ptr<rocksdb::Env> rocks_env_;
  ManualClock clock_;
  Logger logger_{LogLevel::kError};
  MetricsRegistry metrics_;
  std::unique_ptr<Engine> engine_;
};

// The log's disk fills (ENOSPC) or fails (EIO): the write is refused (507 / 503 codes), the
// writer's later batches are held back until the refused one is resent, and writing resumes on
// the clock once the disk is back.
TEST_F(EngineDiskFaultTest, LogFullDiskRefusesWithResourceExhaustedAndResumes) {
  Open();
  ASSERT_TRUE(Write(1).ok());
  wal_fs_.SetWriteError(Status::ResourceExhausted("injected ENOSPC"));
  Status refused = Write(2);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused.ToString();
  EXPECT_EQ(engine_->LogHealth().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(Write(3).code(), StatusCode::kUnavailable);  // held back behind batch 2

  wal_fs_.SetWriteError(Status::Ok());  // space comes back
  clock_.AwaitWaiters(2);               // the log's retry and the checkpointer
  clock_.Advance(1);
  clock_.AwaitWaiters(2);
  EXPECT_TRUE(engine_->LogHealth().ok()) << engine_->LogHealth().ToString();
  Status fenced = Write(3);  // batch 2 first
  EXPECT_EQ(fenced.code(), StatusCode::kUnavailable) << fenced.ToString();
  ASSERT_TRUE(Write(2).ok());
  ASSERT_TRUE(Write(3).ok());
  ExpectBatches(3);
  Open();  // a restart recovers the same, from the log's abandoned and fresh segments
  ExpectBatches(3);
}

TEST_F(EngineDiskFaultTest, LogIoErrorRefusesWithUnavailableAndResumes) {
  Open();
  ASSERT_TRUE(Write(1).ok());
  wal_fs_.SetWriteError(Status::IoError("injected EIO"));
  Status refused = Write(2);
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused.ToString();
  EXPECT_EQ(engine_->LogHealth().code(), StatusCode::kIoError);
  wal_fs_.SetWriteError(Status::Ok());
  clock_.AwaitWaiters(2);
  clock_.Advance(1);
  clock_.AwaitWaiters(2);
  ASSERT_TRUE(Write(2).ok());
  ASSERT_TRUE(Write(3).ok());
  ExpectBatches(3);
  Open();
  ExpectBatches(3);
}

// Cuts the power in both file systems (dropping what was not synced, or tearing it) and starts
// again: the next lifetime must find every acknowledged batch.
void PowerCutAndRestart(EngineDiskFaultTest& t, bool torn, uint64_t seed) {
  Status wal_crash = torn ? t.wal_fs_.CrashWithTornWrites(seed) : t.wal_fs_.Crash();
  ASSERT_TRUE(wal_crash.ok()) << wal_crash.ToString();
  rocksdb::IOStatus rocks_crash =
      torn ? t.rocks_fs_->CrashWithTornWrites(seed + 1) : t.rocks_fs_->Crash();
  ASSERT_TRUE(rocks_crash.ok()) << rocks_crash.ToString();
  t.engine_.reset();  // the dead process
  t.wal_fs_.Restart();
  t.rocks_fs_->Restart();
  t.Open();
}

// The store's disk fills or fails under RocksDB's own log (with `torn`, the failed append leaves
// half a record in it): writes still go to the log and memory (acknowledged), the sealer keeps the
// refused seal and retries it on the clock, checkpoints are refused (the log keeps everything) and
// StoreHealth says why. Once the disk takes writes again the sealer's next retry recovers the
// store in the process (ChunkStore::Resume closes and opens the database, which starts a new
// RocksDB log file before any new write): no restart. Every point is there, and stays there
// through a power cut after the recovery; the run record refused meanwhile is written too.
void StoreLogFaultResumesInProcess(EngineDiskFaultTest& t, rocksdb::IOStatus injected,
                                   StatusCode code, bool torn) {
  t.Open();
  uint64_t seq = 0;
  for (; seq < 2; ++seq) ASSERT_TRUE(t.Write(seq + 1).ok());
  ASSERT_TRUE(t.engine_->Checkpoint().ok());
  t.rocks_fs_->SetWriteError(injected, "", torn);
  for (; seq < 6; ++seq) ASSERT_TRUE(t.Write(seq + 1).ok()) << "the log still takes writes";
  ASSERT_TRUE(t.Rename("renamed").ok());  // its run record is refused: written at a checkpoint
  Status checkpoint = t.engine_->Checkpoint();
  EXPECT_EQ(checkpoint.code(), code) << checkpoint.ToString();
  EXPECT_EQ(t.engine_->StoreHealth().code(), code) << t.engine_->StoreHealth().ToString();
  EXPECT_GT(t.rocks_fs_->RefusedWrites(), 0u);
  t.ExpectBatches(seq);  // reads are served from memory meanwhile

  t.clock_.AwaitWaiters(3);  // the sealer's retry, the log's writer and the checkpointer
  t.clock_.Advance(1);       // a retry while the disk still fails: nothing changes
  t.clock_.AwaitWaiters(3);
  EXPECT_EQ(t.engine_->StoreHealth().code(), code) << t.engine_->StoreHealth().ToString();
  EXPECT_FALSE(t.engine_->Checkpoint().ok());
  t.ExpectBatches(seq);

  t.rocks_fs_->SetWriteError(rocksdb::IOStatus::OK());
  t.clock_.Advance(1);  // the retry: the store is opened again, the seal lands
  t.engine_->WaitForSealer();
  EXPECT_TRUE(t.engine_->StoreHealth().ok()) << t.engine_->StoreHealth().ToString();
  Status after = t.engine_->Checkpoint();  // writes the refused run record first
  EXPECT_TRUE(after.ok()) << after.ToString();
  EXPECT_TRUE(t.engine_->StoreHealth().ok()) << t.engine_->StoreHealth().ToString();
  t.ExpectBatches(seq);
  for (; seq < 8; ++seq) ASSERT_TRUE(t.Write(seq + 1).ok());
  t.ExpectBatches(seq);
  ASSERT_TRUE(t.engine_->Checkpoint().ok());                   // the log keeps nothing before it
  for (; seq < 10; ++seq) ASSERT_TRUE(t.Write(seq + 1).ok());  // in the log and the store only

  PowerCutAndRestart(t, torn, /*seed=*/seq);
  ASSERT_NE(t.engine_, nullptr);
  t.ExpectBatches(seq);
  EXPECT_EQ(t.RunName(), "renamed");
  EXPECT_TRUE(t.engine_->StoreHealth().ok()) << t.engine_->StoreHealth().ToString();
  ASSERT_TRUE(t.engine_->Checkpoint().ok());
  t.Open();  // a clean restart
  t.ExpectBatches(seq);
}

// The store's disk fills under its table files only (a memtable flush fails; RocksDB's own log
// still takes writes): RocksDB stops taking writes, seals wait and checkpoints are refused as
// above, and once the disk takes writes again the sealer's next retry resumes the store in the
// same process: no restart. Every point is there, before and after a restart. (EIO there is fatal
// to RocksDB 7.8, as under its own log: a restart recovers it, as in the test below.)
void StoreTableFaultResumesInProcess(EngineDiskFaultTest& t, rocksdb::IOStatus injected,
                                     StatusCode code) {
  t.Open();
  uint64_t seq = 0;
  for (; seq < 2; ++seq) ASSERT_TRUE(t.Write(seq + 1).ok());
  ASSERT_TRUE(t.engine_->Checkpoint().ok());  // the seals are in the store's memtable
  t.rocks_fs_->SetWriteError(injected, ".sst");
  Status flush = t.engine_->CompactStore();  // flushes the memtable: its table file is refused
  EXPECT_EQ(flush.code(), code) << flush.ToString();
  for (; seq < 6; ++seq) ASSERT_TRUE(t.Write(seq + 1).ok()) << "the log still takes writes";
  ASSERT_TRUE(t.Rename("renamed").ok());  // its run record is refused: written at a checkpoint
  Status checkpoint = t.engine_->Checkpoint();
  EXPECT_EQ(checkpoint.code(), code) << checkpoint.ToString();
  EXPECT_EQ(t.engine_->StoreHealth().code(), code) << t.engine_->StoreHealth().ToString();
  t.ExpectBatches(seq);

  t.rocks_fs_->SetWriteError(rocksdb::IOStatus::OK());
  t.clock_.AwaitWaiters(3);  // the sealer's retry, the log's writer and the checkpointer
  t.clock_.Advance(1);       // the retry: Resume() flushes the memtable, the seal lands
  t.engine_->WaitForSealer();
  EXPECT_TRUE(t.engine_->StoreHealth().ok()) << t.engine_->StoreHealth().ToString();
  Status after = t.engine_->Checkpoint();
  EXPECT_TRUE(after.ok()) << after.ToString();
  for (; seq < 8; ++seq) ASSERT_TRUE(t.Write(seq + 1).ok());
  t.ExpectBatches(seq);
  ASSERT_TRUE(t.engine_->Checkpoint().ok());  // the log no longer holds the rename
  t.Open();
  t.ExpectBatches(seq);
  EXPECT_EQ(t.RunName(), "renamed") << "the refused run record was written again";
}

// A run's graph, histogram, image and text, and a rename, arrive while the store's disk is full
// (no seal is pending: nothing but these writes fails): each is acknowledged (the log has it), the
// store refuses it, checkpoints are refused and StoreHealth says why. Once the disk takes writes
// again the next checkpoint recovers the store and writes each of them (a text written twice at
// one place meanwhile, its newer value): after it, and after a restart that replays nothing,
// every one reads back.
TEST_F(EngineDiskFaultTest, RecordsRefusedWhileTheStoreIsDownAreWrittenOnceItIsBack) {
  Open();
  ASSERT_TRUE(Write(1).ok());
  ASSERT_TRUE(engine_->Checkpoint().ok());
  rocks_fs_->SetWriteError(rocksdb::IOStatus::NoSpace("injected ENOSPC"));
  const std::string png = test_images::Png(2, 2);
  const std::string graph = R"({"name":"net"})";
  auto batch_of = [](v1::WriteRequest* request) {
    v1::RunBatch* batch = request->add_runs();
    batch->set_project("p");
    batch->set_run("r");
    return batch;
  };
  v1::WriteRequest request;
  v1::RunBatch* batch = batch_of(&request);
  batch->mutable_metadata()->set_graph_json(graph);
  batch->mutable_metadata()->set_name("renamed");
  v1::Histogram* histogram = batch->add_histograms();
  histogram->set_name("w");
  histogram->set_step(3);
  histogram->set_time(1767225600.0);
  for (double e : {0.0, 1.0, 2.0}) histogram->add_edges(e);
  for (double c : {5.0, 7.0}) histogram->add_counts(c);
  v1::Image* image = batch->add_images();
  image->set_name("samples");
  image->set_step(3);
  image->set_time(1767225600.0);
  image->set_data(png);
  for (const char* value : {"old", "new"}) {  // the same place twice: the newer one must win
    v1::Text* text = batch->add_texts();
    text->set_name("notes");
    text->set_step(3);
    text->set_time(1767225600.0);
    text->set_value(value);
  }
  ASSERT_TRUE(Write(request).ok()) << "the log takes it";
  EXPECT_GT(rocks_fs_->RefusedWrites(), 0u);
  EXPECT_EQ(engine_->StoreHealth().code(), StatusCode::kResourceExhausted);
  Status refused = engine_->Checkpoint();
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused.ToString();

  rocks_fs_->SetWriteError(rocksdb::IOStatus::OK());
  Status checkpoint = engine_->Checkpoint();  // recovers the store, writes what it refused
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.ToString();
  EXPECT_TRUE(engine_->StoreHealth().ok()) << engine_->StoreHealth().ToString();
  for (bool restarted : {false, true}) {
    SCOPED_TRACE(restarted ? "after a restart" : "before a restart");
    if (restarted) Open();  // the log holds nothing past the checkpoint: all from the store
    EXPECT_EQ(RunName(), "renamed");
    Result<std::string> stored_graph = engine_->ReadGraph("p", "r");
    ASSERT_TRUE(stored_graph.ok()) << stored_graph.status().ToString();
    EXPECT_EQ(*stored_graph, graph);
    std::vector<Histogram> histograms;
    ASSERT_TRUE(engine_->ReadHistograms({"p", "r", "w"}, {}, &histograms).ok());
    ASSERT_EQ(histograms.size(), 1u);
    EXPECT_EQ(histograms[0].step, 3);
    std::vector<ImageEntry> images;
    ASSERT_TRUE(engine_->ReadImages("p", "r", {}, &images).ok());
    ASSERT_EQ(images.size(), 1u);
    Result<std::string> bytes = engine_->ReadBlob(images[0].sha256);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    EXPECT_EQ(*bytes, png);
    EXPECT_EQ(engine_->BlobTotals().blobs, 1);
    std::vector<TextEntry> texts;
    ASSERT_TRUE(engine_->ReadTexts("p", "r", {}, &texts).ok());
    ASSERT_EQ(texts.size(), 1u);
    EXPECT_EQ(texts[0].value, "new");
    ExpectBatches(1);
  }
}

TEST_F(EngineDiskFaultTest, StoreTableFileFullDiskResumesWithoutARestart) {
  StoreTableFaultResumesInProcess(*this, rocksdb::IOStatus::NoSpace("injected ENOSPC"),
                                  StatusCode::kResourceExhausted);
}

TEST_F(EngineDiskFaultTest, StoreTableFileIoErrorResumesWithoutARestart) {
  StoreTableFaultResumesInProcess(*this, rocksdb::IOStatus::IOError("injected EIO"),
                                  StatusCode::kIoError);
}

TEST_F(EngineDiskFaultTest, StoreLogFullDiskResumesWithoutARestart) {
  StoreLogFaultResumesInProcess(*this, rocksdb::IOStatus::NoSpace("injected ENOSPC"),
                                StatusCode::kResourceExhausted, /*torn=*/false);
}

TEST_F(EngineDiskFaultTest, StoreLogFullDiskMidRecordResumesWithoutARestart) {
  StoreLogFaultResumesInProcess(*this, rocksdb::IOStatus::NoSpace("injected ENOSPC"),
                                StatusCode::kResourceExhausted, /*torn=*/true);
}

TEST_F(EngineDiskFaultTest, StoreLogIoErrorResumesWithoutARestart) {
  StoreLogFaultResumesInProcess(*this, rocksdb::IOStatus::IOError("injected EIO"),
                                StatusCode::kIoError, /*torn=*/false);
}

TEST_F(EngineDiskFaultTest, StoreLogIoErrorMidRecordResumesWithoutARestart) {
  StoreLogFaultResumesInProcess(*this, rocksdb::IOStatus::IOError("injected EIO"),
                                StatusCode::kIoError, /*torn=*/true);
}

}  // namespace
}  // namespace trainwatch::storage
