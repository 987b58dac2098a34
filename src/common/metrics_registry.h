// Operational metrics in the Prometheus text exposition format.
//
// Components receive the registry from main and register their instruments once; the returned
// instruments live as long as the registry and are updated lock-free. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"

namespace trainwatch {

class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Latency histogram with fixed exponential buckets, in seconds.
class Histogram {
 public:
  static constexpr std::array<double, 14> kBounds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};
  void Observe(double seconds);
  // Cumulative counts per bound, then +Inf; and the sum.
  void Snapshot(std::array<uint64_t, kBounds.size() + 1>* cumulative, double* sum) const;

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> counts_{};
  std::atomic<uint64_t> sum_micros_{0};
};

class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // `labels` is either empty or a rendered label set like `path="/api/v1/write"`.
  Counter& AddCounter(const std::string& name, const std::string& help,
                      const std::string& labels = "");
  Histogram& AddHistogram(const std::string& name, const std::string& help,
                          const std::string& labels = "");
  // A gauge read at exposition time; `read` must be thread-safe and outlive the registry's use.
  void AddGauge(const std::string& name, const std::string& help, std::function<double()> read);

  // The text exposition format (version 0.0.4).
  std::string Render() const;

 private:
  struct Entry {
    std::string name, help, labels, type;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Histogram> histogram;
    std::function<double()> gauge;
  };
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_ TW_GUARDED_BY(mu_);  // entries are never removed
};

}  // namespace trainwatch
