// Where a distributed run's per-series bytes go (issue 16): memory of the engine's series and
// heads, and the store's records, headers and chunks, for R ranks x M metrics x S steps of one run
// beside the same points from one rank. Runs the engine in-process (a real write-ahead log and
// RocksDB store in a temporary directory); prints figures only.
//
//   ranks_storage_probe [--ranks 1024] [--metrics 50] [--steps 180] [--chunk-points 1024]
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "storage/chunk_store.h"
#include "storage/encoding/chunk_codec.h"
#include "storage/engine.h"
#include "storage/wal/wal_log.h"

namespace tw = trainwatch;
namespace st = trainwatch::storage;

namespace {

constexpr double kT0 = 1767225600.0;

struct Args {
  int ranks = 1024;
  int metrics = 50;
  int steps = 180;
  size_t chunk_points = 1024;
};

double Value(int rank, int metric, int64_t step) {
  return 1.0 / (1 + step) + 0.001 * rank + 0.01 * metric +
         static_cast<double>((step * 31 + rank * 7 + metric) % 13) * 1e-4;
}

size_t HeapInUse() { return mallinfo2().uordblks; }

double RssBytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return double(resident) * 4096;
}

std::unique_ptr<st::Engine> Open(const std::string& dir, const Args& args, tw::Clock& clock,
                                 tw::Logger& logger, tw::MetricsRegistry& metrics) {
  auto wal = st::wal::WalLog::Open(tw::PosixFileSystem(), dir + "/wal");
  auto store = st::ChunkStore::Open(dir + "/store");
  if (!wal.ok() || !store.ok()) std::abort();
  st::EngineOptions options;
  options.chunk_points = args.chunk_points;
  options.checkpoint_interval_seconds = 1e9;
  auto engine = st::Engine::Open(options, std::move(wal).value(), std::move(store).value(), clock,
                                 logger, metrics);
  if (!engine.ok()) {
    std::fprintf(stderr, "open: %s\n", engine.status().ToString().c_str());
    std::abort();
  }
  return std::move(engine).value();
}

void Write(st::Engine& engine, tw::v1::WriteRequest request) {
  std::promise<void> done;
  engine.Write(std::move(request), [&](const tw::Status& s, const st::WriteOutcome&) {
    if (!s.ok()) std::fprintf(stderr, "write: %s\n", s.ToString().c_str());
    done.set_value();
  });
  done.get_future().get();
}

// One batch: `rank` (< 0: none) writing steps [from, to) of every metric. Without a rank, step t
// holds what rank t / rank_steps holds at step t % rank_steps: the same values, from one rank.
void AddBatch(tw::v1::WriteRequest* request, const std::string& run, int rank, int world,
              int metrics, int64_t from, int64_t to, int64_t rank_steps = 1) {
  tw::v1::RunBatch* batch = request->add_runs();
  batch->set_project("ranks");
  batch->set_run(run);
  if (rank >= 0) {
    batch->mutable_rank()->set_rank(rank);
    batch->mutable_rank()->set_world_size(world);
    batch->mutable_rank()->set_local_rank(rank % 8);
    batch->mutable_rank()->set_host("node-" + std::to_string(rank / 8));
  }
  for (int64_t s = from; s < to; ++s) {
    batch->add_steps(s);
    batch->add_times(kT0 + static_cast<double>(s) + std::max(rank, 0) * 1e-4);
  }
  for (int m = 0; m < metrics; ++m) {
    tw::v1::MetricColumn* col = batch->add_metrics();
    char name[32];
    std::snprintf(name, sizeof name, "train/metric_%02d", m);
    col->set_name(name);
    for (int64_t s = from; s < to; ++s) {
      col->add_values(rank >= 0 ? Value(rank, m, s)
                                : Value(static_cast<int>(s / rank_steps), m, s % rank_steps));
    }
  }
}

struct StoreFigures {
  uint64_t series = 0, series_bytes = 0;
  uint64_t chunks = 0, header_bytes = 0, encoded_bytes = 0, points = 0;
  uint64_t disk = 0;
};

StoreFigures Inspect(const std::string& dir) {
  StoreFigures f;
  auto store = st::ChunkStore::Open(dir + "/store");
  if (!store.ok()) std::abort();
  (void)(*store)->ForEachSeries([&](st::SeriesRecord r) {
    ++f.series;
    // key "s" + 8, value: version, id, 3 strings, (rank), gen, next_chunk_no, lsn, rewinds
    f.series_bytes += 9 + 1 + 8 + 12 + r.key.project.size() + r.key.run.size() +
                      r.key.metric.size() + (r.key.rank > 0 ? 4 : 0) + 4 + 4 + 8 + 4;
    return tw::Status::Ok();
  });
  (void)(*store)->ForEachChunk([&](st::StoredChunk c) {
    ++f.chunks;
    f.header_bytes += 13 + 102;  // key, value
    f.encoded_bytes += 13 + c.ref.encoded_bytes;
    f.points += c.ref.summary.count;
    return tw::Status::Ok();
  });
  (void)(*store)->CompactAll();
  f.disk = (*store)->DiskBytes();
  return f;
}

void Print(const char* label, const StoreFigures& f, uint64_t user_points) {
  std::printf("  %s: %lu series records (%.0f B each), %lu chunks of %.0f points on average\n",
              label, f.series, f.series ? double(f.series_bytes) / f.series : 0.0, f.chunks,
              f.chunks ? double(f.points) / f.chunks : 0.0);
  std::printf(
      "    per user point: series records %.3f B, chunk headers %.3f B, chunk data %.3f B"
      " (keys included) = %.3f B; store on disk after compaction %.3f B\n",
      double(f.series_bytes) / user_points, double(f.header_bytes) / user_points,
      double(f.encoded_bytes) / user_points,
      double(f.series_bytes + f.header_bytes + f.encoded_bytes) / user_points,
      double(f.disk) / user_points);
}

// Encoded bytes per point of `points` cut into chunks of `size` points (times absent, as sealed).
double CodecBytesPerPoint(const std::vector<st::Point>& points, size_t size, std::string* enc) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < points.size(); i += size) {
    size_t end = std::min(points.size(), i + size);
    st::EncodeOptions o;
    o.times_absent = true;
    auto e = st::EncodeChunk(std::span<const st::Point>(points.data() + i, end - i), o);
    if (!e.ok()) std::abort();
    bytes += e->size();
    if (i == 0) {
      auto stats = st::InspectChunk(*e);
      if (!stats.ok()) {
        *enc = stats.status().ToString();
        continue;
      }
      *enc = stats->value_encoding + " " + std::to_string(stats->value_bytes) + " B";
    }
  }
  return double(bytes) / points.size();
}

void CodecFigures(int ranks, int metrics) {
  std::printf("codec alone (times absent), value bytes per point by chunk size:\n");
  for (int kind = 0; kind < 2; ++kind) {
    for (size_t size : {180, 1024, 4096}) {
      double sum = 0;
      std::string enc;
      int n = 0;
      for (int r = 0; r < ranks; r += std::max(1, ranks / 8)) {
        for (int m = 0; m < metrics; m += std::max(1, metrics / 5)) {
          std::vector<st::Point> pts;
          // kind 0: a rank's series over 4096 steps; kind 1: rank 0 at steps far from 0 (as the
          // one-rank run of ranks_bench.py holds most of its points).
          int64_t from = kind == 0 ? 0 : 100000;
          for (int64_t s = from; s < from + 4096; ++s)
            pts.push_back({s, 0, Value(kind ? 0 : r, m, s)});
          sum += CodecBytesPerPoint(pts, size, &enc);
          ++n;
        }
      }
      std::printf("  %s, chunks of %zu: %.3f B/pt (first chunk's values: %s)\n",
                  kind == 0 ? "rank series from step 0" : "one-rank series at step 100000", size,
                  sum / n, enc.c_str());
    }
  }
}

// What chunks across ranks would cost (not a format the store has): one metric's points of
// `group` ranks at steps [0, steps) in one chunk, rank-major (rank r's step s at r * steps + s) or
// step-major (at s * group + r); the codec wants increasing steps, so they are renumbered.
void CrossRankFigures(int ranks, int metrics, int steps) {
  std::printf("codec alone, %d steps of one metric across ranks in one chunk (times absent):\n",
              steps);
  for (int group : {1, 16, 64}) {
    for (int order = 0; order < 2; ++order) {
      if (group == 1 && order == 1) continue;
      uint64_t bytes = 0, points = 0;
      std::string enc;
      for (int m = 0; m < metrics; m += std::max(1, metrics / 5)) {
        for (int g = 0; g + group <= ranks; g += group) {
          std::vector<st::Point> pts(static_cast<size_t>(group) * steps);
          for (int r = 0; r < group; ++r) {
            for (int s = 0; s < steps; ++s) {
              size_t i = order == 0 ? size_t(r) * steps + s : size_t(s) * group + r;
              pts[i] = {int64_t(i), 0, Value(g + r, m, s)};
            }
          }
          bytes += static_cast<uint64_t>(CodecBytesPerPoint(pts, pts.size(), &enc) * pts.size());
          points += pts.size();
        }
      }
      std::printf("  %2d rank(s) per chunk, %s: %.3f B/pt (%s)\n", group,
                  order == 0 ? "rank-major" : "step-major", double(bytes) / points, enc.c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--ranks") args.ranks = std::atoi(argv[i + 1]);
    if (a == "--metrics") args.metrics = std::atoi(argv[i + 1]);
    if (a == "--steps") args.steps = std::atoi(argv[i + 1]);
    if (a == "--chunk-points") args.chunk_points = std::strtoul(argv[i + 1], nullptr, 10);
  }
  std::printf("sizeof: Series %zu, SharedMutex %zu, SeriesKey %zu, Point %zu, ChunkRef %zu\n",
              sizeof(st::Series), sizeof(tw::SharedMutex), sizeof(st::SeriesKey), sizeof(st::Point),
              sizeof(st::ChunkRef));
  CodecFigures(args.ranks, args.metrics);
  CrossRankFigures(args.ranks, args.metrics, args.steps);
  std::string root = std::filesystem::temp_directory_path() / "ranks_storage_probe_XXXXXX";
  if (mkdtemp(root.data()) == nullptr) return 1;
  tw::ManualClock clock;
  tw::Logger logger(tw::LogLevel::kWarn);
  tw::MetricsRegistry metrics;
  const uint64_t series = uint64_t(args.ranks) * args.metrics;
  const uint64_t points = series * args.steps;
  {
    const std::string dir = root + "/ranks";
    auto engine = Open(dir, args, clock, logger, metrics);
    size_t heap0 = HeapInUse();
    size_t heap_after_first = 0;
    for (int64_t step = 0; step < args.steps; ++step) {
      for (int g = 0; g < args.ranks; g += 64) {
        tw::v1::WriteRequest request;
        for (int r = g; r < std::min(args.ranks, g + 64); ++r)
          AddBatch(&request, "job", r, args.ranks, args.metrics, step, step + 1);
        Write(*engine, std::move(request));
      }
      if (step == 0) heap_after_first = HeapInUse();
      if ((step + 1) % 60 == 0) {
        std::printf("  after %ld steps: heap %.0f B per series, RSS %.1f MB\n", step + 1,
                    double(HeapInUse() - heap0) / series, RssBytes() / 1e6);
      }
    }
    size_t heap = HeapInUse();
    std::printf("%d ranks x %d metrics x %d steps (%lu series, %lu points)\n", args.ranks,
                args.metrics, args.steps, series, points);
    std::printf(
        "  heap: %.0f B per series after the first step, %.0f B after %d steps "
        "(%.1f B per point held)\n",
        double(heap_after_first - heap0) / series, double(heap - heap0) / series, args.steps,
        double(heap - heap0) / points);
    if (!engine->Close().ok()) return 1;
    engine.reset();
    Print("ranks", Inspect(dir), points);
  }
  {
    const std::string dir = root + "/one";
    auto engine = Open(dir, args, clock, logger, metrics);
    const int64_t total = int64_t(args.ranks) * args.steps;
    size_t heap0 = HeapInUse();
    for (int64_t s = 0; s < total; s += 1000) {
      tw::v1::WriteRequest request;
      AddBatch(&request, "single", -1, 0, args.metrics, s, std::min(total, s + 1000), args.steps);
      Write(*engine, std::move(request));
    }
    std::printf("one rank, %ld steps x %d metrics (the same values)\n", total, args.metrics);
    std::printf("  heap: %.0f B per series at the end\n",
                double(HeapInUse() - heap0) / args.metrics);
    if (!engine->Close().ok()) return 1;
    engine.reset();
    Print("one rank", Inspect(dir), points);
  }
  std::filesystem::remove_all(root);
  return 0;
}
