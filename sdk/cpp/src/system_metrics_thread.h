// SystemMetricsThread: samples the machine (system/... series: CPU, memory, disk and network I/O,
// GPUs through NVML) at a fixed interval and logs each sample into a run as a sampled row (sample
// number, not training step). Stops when destroyed.
#pragma once

#include <condition_variable>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "system/system_sampler.h"

namespace trainwatch::sdk {

class SystemMetricsThread {
 public:
  using Sink = std::function<void(
      int64_t sample, const std::vector<std::pair<std::string, double>>& values, double unix_time)>;
  SystemMetricsThread(double interval_seconds, SystemSamplerOptions options, Sink sink);
  ~SystemMetricsThread() TW_EXCLUDES(mu_);
  SystemMetricsThread(const SystemMetricsThread&) = delete;
  SystemMetricsThread& operator=(const SystemMetricsThread&) = delete;

 private:
  void Loop(double interval_seconds, SystemSamplerOptions options) TW_EXCLUDES(mu_);

  Sink sink_;
  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ TW_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace trainwatch::sdk
