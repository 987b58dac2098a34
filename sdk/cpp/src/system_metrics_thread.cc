#include "system_metrics_thread.h"

#include <chrono>

#include "client_core.h"
#include "system/system_sampler.h"

namespace trainwatch::sdk {

SystemMetricsThread::SystemMetricsThread(double interval_seconds, std::string nvml_library,
                                         Sink sink)
    : sink_(std::move(sink)) {
  thread_ = std::thread(
      [this, interval_seconds, lib = std::move(nvml_library)] { Loop(interval_seconds, lib); });
}

SystemMetricsThread::~SystemMetricsThread() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void SystemMetricsThread::Loop(double interval_seconds, std::string nvml_library) {
  SystemSamplerOptions options;
  options.nvml_library = std::move(nvml_library);
  SystemSampler sampler(options);
  int64_t sample = 0;
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    auto values = sampler.Sample(MonotonicNow());
    if (!values.empty()) sink_(sample++, values, UnixNow());
    next += std::chrono::microseconds(static_cast<int64_t>(interval_seconds * 1e6));
    MutexLock lock(mu_);
    if (cv_.wait_until(lock.native(), next, [&]() TW_REQUIRES(mu_) { return stop_; })) return;
  }
}

}  // namespace trainwatch::sdk
