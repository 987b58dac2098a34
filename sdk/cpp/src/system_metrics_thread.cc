#include "system_metrics_thread.h"

#include <chrono>

#include "client_core.h"

namespace trainwatch::sdk {

SystemMetricsThread::SystemMetricsThread(double interval_seconds, SystemSamplerOptions options,
                                         Sink sink)
    : sink_(std::move(sink)) {
  thread_ = std::thread(
      [this, interval_seconds, options = std::move(options)] { Loop(interval_seconds, options); });
}

SystemMetricsThread::~SystemMetricsThread() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void SystemMetricsThread::Loop(double interval_seconds, SystemSamplerOptions options) {
  SystemSampler sampler(std::move(options));
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
