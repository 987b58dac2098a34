// Latency percentiles for benchmark reports (nearest-rank).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace trainwatch::bench {

struct LatencySummary {
  size_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;  // in the unit of the samples
};

// Sorts `samples` in place.
inline LatencySummary Summarize(std::vector<double>& samples) {
  LatencySummary s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  auto rank = [&](double q) {
    size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(samples.size())));
    return samples[std::min(samples.size() - 1, i == 0 ? 0 : i - 1)];
  };
  s.p50 = rank(0.50);
  s.p90 = rank(0.90);
  s.p99 = rank(0.99);
  s.max = samples.back();
  double sum = 0;
  for (double v : samples) sum += v;
  s.mean = sum / static_cast<double>(samples.size());
  return s;
}

// "p50 1.23 p90 ... p99 ... max ... mean ..." with the samples scaled by `scale`.
inline std::string FormatSummary(const LatencySummary& s, double scale, const char* unit) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "p50 %.3f  p90 %.3f  p99 %.3f  max %.3f  mean %.3f %s (n=%zu)",
                s.p50 * scale, s.p90 * scale, s.p99 * scale, s.max * scale, s.mean * scale, unit, s.count);
  return buf;
}

}  // namespace trainwatch::bench
