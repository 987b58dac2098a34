// TensorBoard event files: generates a large logdir, and measures the reader alone (framing with
// CRC checks, Event and Summary decoding, one core). bench/tfevents_import_bench.py drives it and
// times `trainwatch import` into a real server on the same files.
//
//   tfevents_bench generate DIR --bytes N [--runs R]
//   tfevents_bench read DIR
//
// The logdir's mix, per step of every run: 16 scalars, each its own event as PyTorch's
// SummaryWriter.add_scalar writes them (even runs: `simple_value`; odd runs: TF2's rank-0 float
// tensor with the scalars plugin's metadata on each tag's first value), and every 50 steps two
// histograms of 30 buckets (v1 `histo` in even runs, the v2 [30, 3] tensor in odd runs). By bytes
// that is about 98% scalars, as in real training logs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "tfevents/event.h"
#include "tfevents/event_encoder.h"
#include "tfevents/event_file_reader.h"
#include "tfevents/event_file_writer.h"
#include "tfevents/summary.h"
#include "tfevents/tensor.h"
#include "tfevents/wire_writer.h"

namespace tfe = trainwatch::tfevents;
namespace fs = std::filesystem;

namespace {

constexpr int kScalarsPerStep = 16;
constexpr int kHistogramEvery = 50;
constexpr int kBuckets = 30;
constexpr double kT0 = 1767225600.0;

// One TF2-style scalar event: a rank-0 DT_FLOAT tensor via float_val.
std::string TensorScalarEvent(double wall, int64_t step, const std::string& tag, float v,
                              bool metadata) {
  std::string tensor;
  tfe::WireWriter t(&tensor);
  t.Int32(1, tfe::dtype::kFloat);
  t.Bytes(2, "");
  const float vals[] = {v};
  t.PackedFloats(5, vals);
  std::string md;
  if (metadata) {
    std::string pd;
    tfe::WireWriter(&pd).Bytes(1, "scalars");
    tfe::WireWriter m(&md);
    m.Bytes(1, pd);
    m.Int32(4, 1);
  }
  std::string value;
  tfe::WireWriter vw(&value);
  vw.Bytes(1, tag);
  if (metadata) vw.Bytes(9, md);
  vw.Bytes(8, tensor);
  std::string summary;
  tfe::WireWriter(&summary).Bytes(1, value);
  std::string event;
  tfe::WireWriter e(&event);
  e.Double(1, wall);
  e.Int64(2, step);
  e.Bytes(5, summary);
  return event;
}

std::string V2HistogramEvent(double wall, int64_t step, const std::string& tag,
                             const std::vector<double>& edges, const std::vector<double>& counts,
                             bool metadata) {
  std::vector<double> rows;
  for (size_t i = 0; i < counts.size(); ++i)
    rows.insert(rows.end(), {edges[i], edges[i + 1], counts[i]});
  std::string shape;
  {
    tfe::WireWriter s(&shape);
    for (int64_t d : {static_cast<int64_t>(counts.size()), int64_t{3}}) {
      std::string dim;
      tfe::WireWriter(&dim).Int64(1, d);
      s.Bytes(2, dim);
    }
  }
  std::string tensor;
  tfe::WireWriter t(&tensor);
  t.Int32(1, tfe::dtype::kDouble);
  t.Bytes(2, shape);
  t.Bytes(4, std::string_view(reinterpret_cast<const char*>(rows.data()), rows.size() * 8));
  std::string value;
  tfe::WireWriter vw(&value);
  vw.Bytes(1, tag);
  if (metadata) {
    std::string pd;
    tfe::WireWriter(&pd).Bytes(1, "histograms");
    std::string md;
    tfe::WireWriter(&md).Bytes(1, pd);
    vw.Bytes(9, md);
  }
  vw.Bytes(8, tensor);
  std::string summary;
  tfe::WireWriter(&summary).Bytes(1, value);
  std::string event;
  tfe::WireWriter e(&event);
  e.Double(1, wall);
  e.Int64(2, step);
  e.Bytes(5, summary);
  return event;
}

int Generate(const std::string& dir, uint64_t target_bytes, int runs) {
  std::vector<std::string> tags;
  for (int i = 0; i < kScalarsPerStep; ++i) {
    tags.push_back(i < 4 ? std::string("train/") + (i == 0   ? "loss"
                                                    : i == 1 ? "accuracy"
                                                    : i == 2 ? "lr"
                                                             : "grad_norm")
                         : "layers/block" + std::to_string(i) + "/update_ratio");
  }
  const uint64_t per_run = target_bytes / static_cast<uint64_t>(runs) + 1;
  uint64_t total_bytes = 0, points = 0, histograms = 0;
  for (int r = 0; r < runs; ++r) {
    const bool tf2 = r % 2 == 1;
    const std::string run_dir = dir + "/run" + std::to_string(r);
    auto writer =
        tfe::EventFileWriter::Create(trainwatch::PosixFileSystem(), run_dir, kT0 + r, "bench");
    if (!writer.ok()) {
      std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
      return 1;
    }
    uint32_t rng = 12345u + static_cast<uint32_t>(r);
    auto noise = [&rng] {
      rng = rng * 1664525u + 1013904223u;
      return static_cast<float>(rng >> 8) / 16777216.0f;
    };
    for (int64_t step = 0; (*writer)->bytes_written() < per_run; ++step) {
      const double wall = kT0 + r + step * 0.05;
      for (int i = 0; i < kScalarsPerStep; ++i) {
        const float v = static_cast<float>(std::exp(-step / 20000.0) * (1 + i)) + 0.01f * noise();
        std::string event;
        if (tf2) {
          event = TensorScalarEvent(wall + i * 1e-4, step, tags[i], v, step == 0);
        } else {
          const tfe::NamedFloat nv[] = {{tags[i], v}};
          event = tfe::EncodeScalarsEvent(wall + i * 1e-4, step, nv);
        }
        if (auto s = (*writer)->Write(event); !s.ok()) {
          std::fprintf(stderr, "%s\n", s.ToString().c_str());
          return 1;
        }
        ++points;
      }
      if (step % kHistogramEvery == 0) {
        for (const char* tag : {"weights/fc1", "gradients/fc1"}) {
          std::vector<double> edges, counts;
          for (int b = 0; b <= kBuckets; ++b) edges.push_back(-3.0 + b * 0.2);
          for (int b = 0; b < kBuckets; ++b)
            counts.push_back(std::floor(1000 * std::exp(-std::pow((b - 15) / 5.0, 2))));
          std::string event =
              tf2 ? V2HistogramEvent(wall + 0.01, step, tag, edges, counts, step == 0)
                  : tfe::EncodeHistogramEvent(wall + 0.01, step, tag, edges, counts);
          if (auto s = (*writer)->Write(event); !s.ok()) return 1;
          ++histograms;
        }
      }
    }
    total_bytes += (*writer)->bytes_written();
    if (auto s = (*writer)->Close(); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  }
  std::printf("{\"bytes\": %llu, \"points\": %llu, \"histograms\": %llu, \"runs\": %d}\n",
              static_cast<unsigned long long>(total_bytes), static_cast<unsigned long long>(points),
              static_cast<unsigned long long>(histograms), runs);
  return 0;
}

// The reader alone: every file of every run, each record framed, CRC-checked, decoded (Event, then
// Summary values, tensors and histograms converted), one core.
int Read(const std::string& dir) {
  uint64_t bytes = 0, records = 0, points = 0, histograms = 0, corrupt = 0;
  double checksum = 0;
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename().string().find("tfevents") != std::string::npos)
      files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& path : files) {
    tfe::TagPlugins plugins;  // one run per directory, one file per run here
    tfe::SummaryDecoder decoder(&plugins);
    tfe::DecodedSummary decoded;
    auto reader = tfe::EventFileReader::Open(path);
    if (!reader.ok()) return 1;
    while (true) {
      const tfe::RecordResult r = (*reader)->Next();
      if (r.status == tfe::RecordStatus::kIncomplete) {
        auto more = (*reader)->Fill();
        if (!more.ok() || *more == 0) break;
        continue;
      }
      bytes += r.consumed;
      if (r.status == tfe::RecordStatus::kCorrupt) {
        ++corrupt;
        continue;
      }
      ++records;
      tfe::EventView ev;
      if (!tfe::DecodeEvent(r.data, &ev).ok() || ev.kind != tfe::EventKind::kSummary) continue;
      decoded.Clear();
      if (!decoder.Decode(ev.payload, &decoded).ok()) continue;
      for (const auto& s : decoded.scalars) checksum += s.value;
      points += decoded.scalars.size();
      histograms += decoded.histograms.size();
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "{\"bytes\": %llu, \"records\": %llu, \"points\": %llu, \"histograms\": %llu, \"corrupt\": "
      "%llu, "
      "\"seconds\": %.6f, \"mb_per_s\": %.1f, \"points_per_s\": %.0f, \"checksum\": %.6g}\n",
      static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(records),
      static_cast<unsigned long long>(points), static_cast<unsigned long long>(histograms),
      static_cast<unsigned long long>(corrupt), seconds, bytes / 1e6 / seconds, points / seconds,
      checksum);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 2 && args[0] == "read") return Read(args[1]);
  if (args.size() >= 2 && args[0] == "generate") {
    uint64_t bytes = 1ull << 30;
    int runs = 4;
    for (size_t i = 2; i + 1 < args.size(); i += 2) {
      if (args[i] == "--bytes") bytes = std::strtoull(args[i + 1].c_str(), nullptr, 10);
      if (args[i] == "--runs") runs = std::atoi(args[i + 1].c_str());
    }
    return Generate(args[1], bytes, runs < 1 ? 1 : runs);
  }
  std::fprintf(
      stderr,
      "usage: tfevents_bench generate DIR [--bytes N] [--runs R] | tfevents_bench read DIR\n");
  return 2;
}
