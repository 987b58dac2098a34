#include "server/liveness.h"

#include <algorithm>
#include <future>
#include <vector>

namespace trainwatch::server {

LivenessMonitor::LivenessMonitor(const storage::Engine& engine, ingest::Ingestor& ingestor,
                                 Clock& clock, Logger& logger, LivenessOptions options)
    : engine_(engine),
      ingestor_(ingestor),
      clock_(clock),
      logger_(logger),
      options_(options),
      started_at_(clock.NowUnixSeconds()) {}

LivenessMonitor::~LivenessMonitor() { Stop(); }

size_t LivenessMonitor::SweepOnce() {
  const double now = clock_.NowUnixSeconds();
  std::vector<std::pair<storage::RunLiveness, std::future<ingest::IngestResult>>> writes;
  for (const storage::RunLiveness& run : engine_.ListHeartbeatRuns()) {
    if (run.status != storage::RunStatus::kRunning || run.heartbeat_interval <= 0) continue;
    const double silent_since = std::max(run.last_heartbeat, started_at_);
    if (now - silent_since <= options_.missed_intervals * run.heartbeat_interval) continue;
    if (options_.owns && !options_.owns(run.key.project, run.key.run)) continue;
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project(run.key.project);
    batch->set_run(run.key.run);
    batch->mutable_metadata()->set_status("crashed");
    batch->mutable_metadata()->set_end_time(run.last_heartbeat);
    auto done = std::make_shared<std::promise<ingest::IngestResult>>();
    writes.emplace_back(run, done->get_future());
    ingestor_.WriteProto(std::move(request), [done](ingest::IngestResult result) {
      done->set_value(std::move(result));
    });
  }
  size_t crashed = 0;
  for (auto& [run, future] : writes) {
    ingest::IngestResult result = future.get();
    if (!result.status.ok() || !result.errors.empty()) {
      std::string error =
          result.status.ok() ? result.errors.front().message : result.status.ToString();
      logger_.Error("liveness: marking a silent run crashed",
                    {{"project", run.key.project}, {"run", run.key.run}, {"error", error}});
      continue;
    }
    logger_.Warn("liveness: run stopped sending heartbeats; marked crashed",
                 {{"project", run.key.project},
                  {"run", run.key.run},
                  {"last_heartbeat", run.last_heartbeat},
                  {"heartbeat_interval", run.heartbeat_interval}});
    ++crashed;
  }
  return crashed;
}

void LivenessMonitor::Start() {
  {
    MutexLock lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void LivenessMonitor::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LivenessMonitor::Loop() {
  MutexLock lock(mu_);
  while (!clock_.WaitFor(lock.native(), cv_, options_.sweep_interval_seconds,
                         [&]() TW_REQUIRES(mu_) { return stop_; })) {
    lock.Unlock();
    SweepOnce();
    lock.Lock();
  }
}

}  // namespace trainwatch::server
