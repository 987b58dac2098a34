// The protobuf write path: a body of POST /api/v1/write (application/x-protobuf) or one message of
// the gRPC Ingest stream, parsed as v1::WriteRequest exactly as the transports do, then handed to
// Ingestor::WriteProto, which validates and normalises every batch (names, steps and times, columns
// and rows, histograms, images and texts, heartbeat, metadata JSON) and enforces the series limits
// against the engine.
//
// The engine is real (a write-ahead log in memory, RocksDB in a temporary directory) and holds one
// run written at start-up; the ingestor refuses every write after validation (as under the disk
// guard), so nothing an input does outlives it and every crash reproduces from its input alone.
// What the engine does with a valid write is not fuzzed here.
//
// Checks, besides memory safety: `done` runs exactly once, synchronously; the write is refused with
// the configured status; every error has a message; no more points are rejected than were sent.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "fuzz/fuzz_support.h"
#include "ingest/ingestor.h"
#include "storage/chunk_store.h"
#include "storage/engine.h"
#include "storage/wal/wal_log.h"
#include "trainwatch/v1/ingest.pb.h"

namespace {

using namespace trainwatch;

ingest::IngestLimits FuzzLimits() {
  ingest::IngestLimits limits;
  limits.max_name_bytes = 24;
  limits.max_metrics_per_run = 4;
  limits.max_series_per_project = 6;
  limits.max_metadata_bytes = 512;
  limits.max_graph_bytes = 1024;
  limits.max_histogram_buckets = 16;
  limits.max_image_bytes = 4096;
  limits.max_caption_bytes = 64;
  limits.max_text_bytes = 256;
  return limits;
}

// The engine and ingestor, built once per process.
struct Fixture {
  Fixture() : logger(LogLevel::kError) {
    char dir_template[] = "/tmp/tw_fuzz_write_XXXXXX";
    dir = mkdtemp(dir_template);
    auto wal = storage::wal::WalLog::Open(fs, "/wal");
    auto store = storage::ChunkStore::Open(dir + "/store");
    if (!wal.ok() || !store.ok()) std::abort();
    auto opened = storage::Engine::Open(storage::EngineOptions{}, std::move(*wal), std::move(*store), clock,
                                        logger, metrics);
    if (!opened.ok()) std::abort();
    engine = std::move(*opened);
    ingestor = std::make_unique<ingest::Ingestor>(*engine, clock, FuzzLimits(), metrics);

    // One run with two metrics, so that inputs meet existing series and the limits.
    v1::WriteRequest seed;
    v1::RunBatch* batch = seed.add_runs();
    batch->set_project("p");
    batch->set_run("r");
    batch->add_steps(1);
    for (const char* name : {"loss", "acc"}) {
      v1::MetricColumn* column = batch->add_metrics();
      column->set_name(name);
      column->add_values(0.5);
    }
    std::promise<Status> written;
    ingestor->WriteProto(seed, [&](ingest::IngestResult r) { written.set_value(r.status); });
    if (!written.get_future().get().ok()) std::abort();
    ingestor->SetRefusal(Status::Unavailable("fuzzing: validation only"));
  }
  ~Fixture() {
    ingestor.reset();
    engine.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }

  fuzz::MemFileSystem fs;
  ManualClock clock;
  Logger logger;
  MetricsRegistry metrics;
  std::string dir;
  std::unique_ptr<storage::Engine> engine;
  std::unique_ptr<ingest::Ingestor> ingestor;
};

uint64_t CountPoints(const v1::WriteRequest& request) {
  uint64_t n = 0;
  for (const v1::RunBatch& batch : request.runs()) {
    for (const v1::MetricColumn& column : batch.metrics()) n += column.values_size();
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture fixture;
  v1::WriteRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  const uint64_t sent_points = CountPoints(request);

  int calls = 0;
  ingest::IngestResult result;
  fixture.ingestor->WriteProto(std::move(request), [&](ingest::IngestResult r) {
    ++calls;
    result = std::move(r);
  });
  FUZZ_CHECK(calls == 1, "done ran " + std::to_string(calls) + " times before WriteProto returned");
  FUZZ_CHECK(result.status.code() == StatusCode::kUnavailable, result.status.ToString());
  FUZZ_CHECK(result.points_rejected <= sent_points, "more points rejected than sent");
  for (const ingest::LineError& e : result.errors) FUZZ_CHECK(!e.message.empty(), "empty error");
  return 0;
}
