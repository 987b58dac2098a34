// Chunk codec benchmark: cuts every (run, metric) series of a workload into sealed chunks, encodes
// them, and prints per metric the encodings chosen, the bits per value of each column, and the
// size against 24 raw bytes per point; then the overall bytes per point, with a time column in
// every series and with times absent (one time column per run, counted once), and the encode and
// decode throughput. Prints figures only; never passes or fails on them.
//
//   python3 shared/bench/gen_workload.py --preset 1m --out /tmp/wl --no-lp
//   encoding_bench /tmp/wl/workload.jsonl [--chunk-points 1024] [--zstd-level 1] [--repeat 3]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/encoding/chunk_codec.h"

namespace trainwatch::storage {
namespace {

constexpr double kRawBytesPerPoint = 24;  // int64 step + double time + double value

struct Flags {
  std::string workload;
  size_t chunk_points = 1024;
  int zstd_level = 1;
  int repeat = 3;
};

struct Workload {
  std::vector<std::string> runs;
  std::vector<std::string> metrics;
  // series[run][metric]: the points of one series, in step order.
  std::vector<std::vector<std::vector<Point>>> series;
  // run_times[run]: every (step, time) of the run with value 0, for a shared time column.
  std::vector<std::vector<Point>> run_times;
  size_t points = 0;
};

// A slice of one series' points: what one sealed chunk holds.
struct ChunkSlice {
  size_t run = 0, metric = 0;
  std::span<const Point> points;
};

bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--chunk-points" && has_value) {
      flags->chunk_points = std::strtoul(argv[++i], nullptr, 10);
    } else if (arg == "--zstd-level" && has_value) {
      flags->zstd_level = std::atoi(argv[++i]);
    } else if (arg == "--repeat" && has_value) {
      flags->repeat = std::max(1, std::atoi(argv[++i]));
    } else if (!arg.starts_with("--") && flags->workload.empty()) {
      flags->workload = arg;
    } else {
      return false;
    }
  }
  return !flags->workload.empty() && flags->chunk_points > 0 &&
         flags->chunk_points <= kMaxChunkPoints;
}

size_t IndexOf(std::vector<std::string>* names, std::map<std::string, size_t>* index,
               const std::string& name) {
  auto [it, inserted] = index->emplace(name, names->size());
  if (inserted) names->push_back(name);
  return it->second;
}

// Reads the JSONL workload; false (with a message on stderr) on unreadable or malformed input.
bool LoadWorkload(const std::string& path, Workload* w) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", path.c_str());
    return false;
  }
  std::map<std::string, size_t> run_index, metric_index;
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("run") || !j["run"].is_string() ||
        !j.contains("step") || !j["step"].is_number_integer() || !j.contains("time") ||
        !j["time"].is_number() || !j.contains("metrics") || !j["metrics"].is_object()) {
      std::fprintf(stderr, "%s:%zu: not a workload line\n", path.c_str(), line_no);
      return false;
    }
    const size_t run = IndexOf(&w->runs, &run_index, j["run"].get<std::string>());
    const auto step = j["step"].get<int64_t>();
    const auto time = j["time"].get<double>();
    if (w->series.size() <= run) {
      w->series.resize(run + 1);
      w->run_times.resize(run + 1);
    }
    w->run_times[run].push_back(Point{step, time, 0});
    for (const auto& [name, value] : j["metrics"].items()) {
      if (!value.is_number()) continue;
      const size_t metric = IndexOf(&w->metrics, &metric_index, name);
      if (w->series[run].size() <= metric) w->series[run].resize(metric + 1);
      w->series[run][metric].push_back(Point{step, time, value.get<double>()});
      ++w->points;
    }
  }
  return w->points > 0;
}

// Appends the chunks of one series, `chunk_points` points each (the last one may hold fewer).
void Slice(std::span<const Point> points, size_t run, size_t metric, size_t chunk_points,
           std::vector<ChunkSlice>* chunks) {
  for (size_t begin = 0; begin < points.size(); begin += chunk_points) {
    const size_t n = std::min(chunk_points, points.size() - begin);
    chunks->push_back(ChunkSlice{run, metric, points.subspan(begin, n)});
  }
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// CPU seconds this thread has used: steadier than wall time on a shared machine.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The best (smallest) of several timed passes, in wall and in thread-CPU seconds.
struct Timing {
  double wall = 1e300;
  double cpu = 1e300;
};

// Encodes every chunk `repeat` times; returns the best times and leaves the bytes in *encoded.
Timing EncodeAll(const std::vector<ChunkSlice>& chunks, const EncodeOptions& options, int repeat,
                 std::vector<std::string>* encoded) {
  Timing best;
  for (int r = 0; r < repeat; ++r) {
    encoded->clear();
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = ThreadCpuSeconds();
    for (const ChunkSlice& c : chunks) {
      Result<std::string> bytes = EncodeChunk(c.points, options);
      if (!bytes.ok()) {
        std::fprintf(stderr, "encode: %s\n", bytes.status().ToString().c_str());
        std::exit(1);
      }
      encoded->push_back(std::move(bytes).value());
    }
    best.cpu = std::min(best.cpu, ThreadCpuSeconds() - cpu_start);
    best.wall = std::min(best.wall, Seconds(std::chrono::steady_clock::now() - start));
  }
  return best;
}

// Decodes every chunk `repeat` times, checking the count; returns the best times.
Timing DecodeAll(const std::vector<std::string>& encoded, size_t expected_points, int repeat) {
  Timing best;
  std::vector<Point> out;
  for (int r = 0; r < repeat; ++r) {
    size_t decoded = 0;
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = ThreadCpuSeconds();
    for (const std::string& bytes : encoded) {
      out.clear();
      Status s = DecodeChunk(bytes, &out);
      if (!s.ok()) {
        std::fprintf(stderr, "decode: %s\n", s.ToString().c_str());
        std::exit(1);
      }
      decoded += out.size();
    }
    best.cpu = std::min(best.cpu, ThreadCpuSeconds() - cpu_start);
    best.wall = std::min(best.wall, Seconds(std::chrono::steady_clock::now() - start));
    if (decoded != expected_points) {
      std::fprintf(stderr, "decoded %zu points, expected %zu\n", decoded, expected_points);
      std::exit(1);
    }
  }
  return best;
}

// Per-metric totals over all runs and chunks.
struct MetricTotals {
  size_t points = 0, chunks = 0;
  size_t step_bytes = 0, time_bytes = 0, value_bytes = 0, total_bytes = 0, absent_total_bytes = 0;
  std::map<std::string, int> step_encodings, time_encodings, value_encodings;
};

// "name" if one encoding was used for every chunk, else "name (k/n) +m more".
std::string Dominant(const std::map<std::string, int>& tally, size_t chunks) {
  auto best = std::max_element(tally.begin(), tally.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  std::string s = best->first;
  if (static_cast<size_t>(best->second) != chunks) {
    s += " (" + std::to_string(best->second) + "/" + std::to_string(chunks) + ", +" +
         std::to_string(tally.size() - 1) + " other)";
  }
  return s;
}

ChunkStats Inspect(const std::string& bytes) {
  Result<ChunkStats> stats = InspectChunk(bytes);
  if (!stats.ok()) {
    std::fprintf(stderr, "inspect: %s\n", stats.status().ToString().c_str());
    std::exit(1);
  }
  return *stats;
}

int Main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) {
    std::fprintf(stderr,
                 "usage: encoding_bench WORKLOAD.jsonl [--chunk-points N] [--zstd-level L] "
                 "[--repeat R]\n");
    return 2;
  }
  Workload w;
  const auto load_start = std::chrono::steady_clock::now();
  if (!LoadWorkload(flags.workload, &w)) return 1;
  std::printf("workload %s: %zu runs x %zu metrics, %zu points (loaded in %.1f s)\n",
              flags.workload.c_str(), w.runs.size(), w.metrics.size(), w.points,
              Seconds(std::chrono::steady_clock::now() - load_start));
  std::printf("chunk_points %zu, zstd level %d, best of %d\n\n", flags.chunk_points,
              flags.zstd_level, flags.repeat);

  std::vector<ChunkSlice> chunks;
  for (size_t r = 0; r < w.series.size(); ++r) {
    for (size_t m = 0; m < w.series[r].size(); ++m)
      Slice(w.series[r][m], r, m, flags.chunk_points, &chunks);
  }
  const EncodeOptions with_time{.times_absent = false, .zstd_level = flags.zstd_level};
  const EncodeOptions no_time{.times_absent = true, .zstd_level = flags.zstd_level};
  std::vector<std::string> encoded, encoded_absent;
  const Timing enc = EncodeAll(chunks, with_time, flags.repeat, &encoded);
  const Timing enc_absent = EncodeAll(chunks, no_time, flags.repeat, &encoded_absent);
  const Timing dec = DecodeAll(encoded, w.points, flags.repeat);
  const Timing dec_absent = DecodeAll(encoded_absent, w.points, flags.repeat);

  // One shared time column per run: its chunks hold (step, time) with a constant value.
  std::vector<ChunkSlice> time_chunks;
  for (size_t r = 0; r < w.run_times.size(); ++r) {
    Slice(w.run_times[r], r, 0, flags.chunk_points, &time_chunks);
  }
  std::vector<std::string> encoded_times;
  EncodeAll(time_chunks, with_time, 1, &encoded_times);
  size_t shared_time_bytes = 0, run_rows = 0;
  for (const std::string& bytes : encoded_times) shared_time_bytes += bytes.size();
  for (const auto& rows : w.run_times) run_rows += rows.size();

  std::vector<MetricTotals> totals(w.metrics.size());
  MetricTotals all;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const ChunkStats s = Inspect(encoded[i]);
    const ChunkStats a = Inspect(encoded_absent[i]);
    for (MetricTotals* t : {&totals[chunks[i].metric], &all}) {
      t->points += s.count;
      t->chunks += 1;
      t->step_bytes += s.step_bytes;
      t->time_bytes += s.time_bytes;
      t->value_bytes += s.value_bytes;
      t->total_bytes += s.total_bytes;
      t->absent_total_bytes += a.total_bytes;
      t->step_encodings[s.step_encoding]++;
      t->time_encodings[s.time_encoding]++;
      t->value_encodings[s.value_encoding]++;
    }
  }

  std::printf("%-22s %8s %8s %8s %8s %9s %8s  %s\n", "metric", "val b/pt", "stp b/pt", "tim b/pt",
              "B/pt", "B/pt -tm", "ratio", "value encoding");
  for (size_t m = 0; m < w.metrics.size(); ++m) {
    const MetricTotals& t = totals[m];
    const double n = static_cast<double>(t.points);
    std::printf("%-22s %8.2f %8.3f %8.2f %8.3f %9.3f %7.1fx  %s\n", w.metrics[m].c_str(),
                8.0 * t.value_bytes / n, 8.0 * t.step_bytes / n, 8.0 * t.time_bytes / n,
                t.total_bytes / n, t.absent_total_bytes / n, kRawBytesPerPoint * n / t.total_bytes,
                Dominant(t.value_encodings, t.chunks).c_str());
  }
  const double n = static_cast<double>(all.points);
  std::printf("\nstep encodings: %s\ntime encodings: %s\n",
              Dominant(all.step_encodings, all.chunks).c_str(),
              Dominant(all.time_encodings, all.chunks).c_str());
  std::printf("\n%zu chunks, %zu points, raw %.0f bytes (%.0f B/pt)\n", chunks.size(), all.points,
              kRawBytesPerPoint * n, kRawBytesPerPoint);
  std::printf(
      "columns: values %.2f bits/pt, steps %.3f bits/pt, times %.2f bits/pt, "
      "headers %.3f bits/pt\n",
      8.0 * all.value_bytes / n, 8.0 * all.step_bytes / n, 8.0 * all.time_bytes / n,
      8.0 * (all.total_bytes - all.value_bytes - all.step_bytes - all.time_bytes) / n);
  std::printf("with a time column per series:   %10zu bytes  %6.3f B/pt  (%.1fx)\n",
              all.total_bytes, all.total_bytes / n, kRawBytesPerPoint * n / all.total_bytes);
  const size_t shared_total = all.absent_total_bytes + shared_time_bytes;
  std::printf(
      "times absent + 1 column per run: %10zu bytes  %6.3f B/pt  (%.1fx; run time "
      "columns %zu bytes = %.2f bits per row of %zu rows)\n",
      shared_total, shared_total / n, kRawBytesPerPoint * n / shared_total, shared_time_bytes,
      8.0 * shared_time_bytes / run_rows, run_rows);
  std::printf("\nthroughput, one thread, M points/s per CPU second (per wall second):\n");
  std::printf("encode: %6.2f (%6.2f) with times, %6.2f (%6.2f) times absent\n", n / enc.cpu / 1e6,
              n / enc.wall / 1e6, n / enc_absent.cpu / 1e6, n / enc_absent.wall / 1e6);
  std::printf("decode: %6.2f (%6.2f) with times, %6.2f (%6.2f) times absent\n", n / dec.cpu / 1e6,
              n / dec.wall / 1e6, n / dec_absent.cpu / 1e6, n / dec_absent.wall / 1e6);
  return 0;
}

}  // namespace
}  // namespace trainwatch::storage

int main(int argc, char** argv) { return trainwatch::storage::Main(argc, argv); }
