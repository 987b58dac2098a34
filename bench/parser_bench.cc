// The two text parsers of the write path side by side, in one process, on the same points: the
// workload's NDJSON (POST /api/v1/write: ParseJsonLines) and its InfluxDB line protocol (POST
// /write: ParseLineProtocol, then MapPoints), each from bytes to the trainwatch.v1.WriteRequest the
// ingestor takes. Issue 17 asks for a line protocol parser as fast as the NDJSON one.
//
//   parser_bench WORKLOAD_DIR [--repeat N] [--body-bytes B]
//
// WORKLOAD_DIR is what bench/gen_workload.py wrote (workload.jsonl, influx_lp/). NDJSON bodies are
// cut at line ends near --body-bytes (4 MiB, as ingest_bench sends them); line protocol bodies
// are the influx_lp files (5,000 lines each, as the InfluxDB round posts them). Prints the CPU
// time of this thread for the best of --repeat passes over all bodies, and points per CPU-second
// (points: the workload's, R x M x S; the line protocol's extra `step` field is not counted).
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "influx/line_protocol.h"
#include "influx/point_mapping.h"
#include "ingest/json_lines.h"
#include "ingest/limits.h"

namespace {

using trainwatch::influx::MapPoints;
using trainwatch::influx::ParseLineProtocol;
using trainwatch::influx::Precision;
using trainwatch::ingest::IngestLimits;
using trainwatch::ingest::ParseJsonLines;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Bodies of about `bytes` each, cut after a newline.
std::vector<std::string> SplitAtLines(const std::string& text, size_t bytes) {
  std::vector<std::string> bodies;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.size(), start + bytes);
    if (end < text.size()) {
      size_t nl = text.find('\n', end);
      end = nl == std::string::npos ? text.size() : nl + 1;
    }
    bodies.push_back(text.substr(start, end - start));
    start = end;
  }
  return bodies;
}

// The best (least) CPU time of `repeat` passes of `pass`, which returns the points it produced.
double Best(int repeat, const std::function<uint64_t()>& pass, uint64_t* points) {
  double best = 1e300;
  for (int i = 0; i < repeat; ++i) {
    const double t0 = ThreadCpuSeconds();
    *points = pass();
    best = std::min(best, ThreadCpuSeconds() - t0);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: parser_bench WORKLOAD_DIR [--repeat N] [--body-bytes B]\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  int repeat = 5;
  size_t body_bytes = size_t{4} << 20;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--repeat") {
      repeat = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--body-bytes") {
      body_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const std::vector<std::string> ndjson =
      SplitAtLines(ReadFile(dir / "workload.jsonl"), body_bytes);
  std::vector<std::filesystem::path> lp_paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "influx_lp")) {
    lp_paths.push_back(entry.path());
  }
  std::sort(lp_paths.begin(), lp_paths.end());
  std::vector<std::string> lp;
  for (const auto& path : lp_paths) lp.push_back(ReadFile(path));
  if (ndjson.empty() || lp.empty()) {
    std::fprintf(stderr, "%s holds no workload.jsonl or influx_lp/\n", dir.c_str());
    return 1;
  }
  size_t ndjson_bytes = 0, lp_bytes = 0;
  for (const auto& b : ndjson) ndjson_bytes += b.size();
  for (const auto& b : lp) lp_bytes += b.size();

  const IngestLimits limits;
  uint64_t ndjson_points = 0, lp_values = 0, lp_errors = 0, ndjson_errors = 0;
  const double ndjson_s = Best(
      repeat,
      [&] {
        uint64_t n = 0;
        ndjson_errors = 0;
        for (const auto& body : ndjson) {
          auto parsed = ParseJsonLines(body, 1767225600.0, limits);
          n += parsed.points;
          ndjson_errors += parsed.errors.size();
        }
        return n;
      },
      &ndjson_points);
  double parse_only_s = Best(
      repeat,
      [&] {
        uint64_t n = 0;
        for (const auto& body : lp) {
          n += ParseLineProtocol(body, Precision::kNanoseconds).points.size();
        }
        return n;
      },
      &lp_values);
  uint64_t lp_lines = lp_values;
  const double lp_s = Best(
      repeat,
      [&] {
        uint64_t n = 0;
        lp_errors = 0;
        for (const auto& body : lp) {
          auto parsed = ParseLineProtocol(body, Precision::kNanoseconds);
          auto mapped = MapPoints(parsed, "bench", 1767225600.0);
          n += mapped.points;
          lp_errors += parsed.errors.size() + mapped.errors.size();
        }
        return n;
      },
      &lp_values);
  // The workload's points: what NDJSON carries (one value per metric per row).
  const double points = static_cast<double>(ndjson_points);
  std::printf("parser_bench %s: %.0f points, best of %d passes, CPU time of one thread\n",
              dir.c_str(), points, repeat);
  std::printf(
      "  NDJSON          %3zu bodies %7.1f MB  %.3f s  %6.2f M points per CPU-s  (%llu bad "
      "lines)\n",
      ndjson.size(), ndjson_bytes / 1e6, ndjson_s, points / ndjson_s / 1e6,
      static_cast<unsigned long long>(ndjson_errors));
  std::printf(
      "  line protocol   %3zu bodies %7.1f MB  %.3f s  %6.2f M points per CPU-s  (%llu lines, "
      "%llu values mapped, %llu refused)\n",
      lp.size(), lp_bytes / 1e6, lp_s, points / lp_s / 1e6,
      static_cast<unsigned long long>(lp_lines), static_cast<unsigned long long>(lp_values),
      static_cast<unsigned long long>(lp_errors));
  std::printf("    of which parsing %.3f s, mapping %.3f s\n", parse_only_s, lp_s - parse_only_s);
  std::printf("  line protocol / NDJSON, points per CPU-s: %.2fx\n", ndjson_s / lp_s);
  return 0;
}
