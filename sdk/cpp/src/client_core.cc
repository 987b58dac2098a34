#include "client_core.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace trainwatch::sdk {
namespace {

std::string RandomWriterId() {
  std::random_device device;
  char id[33];
  for (int i = 0; i < 4; ++i) std::snprintf(id + 8 * i, 9, "%08x", device());
  return std::string(id, 32);
}

std::string DefaultSpoolRoot() {
  if (const char* dir = std::getenv("TRAINWATCH_SPOOL_DIR"); dir && *dir) return dir;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache) {
    return std::string(cache) + "/trainwatch/spool";
  }
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/trainwatch/spool";
  return "/tmp/trainwatch-spool-" + std::to_string(::getuid());
}

}  // namespace

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double MonotonicNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

SecretMasker MaskerFor(const ClientOptions& options) {
  std::vector<std::string> patterns = SecretMasker::DefaultPatterns();
  patterns.insert(patterns.end(), options.secret_patterns.begin(), options.secret_patterns.end());
  return SecretMasker(patterns);
}

}  // namespace

ClientCore::ClientCore(ClientOptions options, std::string writer_id)
    : options_(std::move(options)),
      masker_(MaskerFor(options_)),
      writer_id_(std::move(writer_id)),
      queue_(options_.buffer_records),
      rng_(std::random_device{}()) {}

std::shared_ptr<ClientCore> ClientCore::Create(ClientOptions options) {
  std::shared_ptr<ClientCore> core(new ClientCore(std::move(options), RandomWriterId()));
  std::string root =
      core->options_.spool_dir.empty() ? DefaultSpoolRoot() : core->options_.spool_dir;
  Status s = core->OpenSpoolDir(root + "/" + core->writer_id_);
  if (!s.ok() && core->options_.spool_dir.empty()) {
    s = core->OpenSpoolDir("/tmp/trainwatch-spool-" + std::to_string(::getuid()) + "/" +
                           core->writer_id_);
  }
  if (!s.ok()) {
    core->Warn(WarningKind::kSpool, "no spool directory (" + s.ToString() +
                                        "): while the server is away, batches are " +
                                        "kept in memory only, up to " +
                                        std::to_string(core->options_.memory_max_bytes) + " bytes");
  }
  core->Start();
  return core;
}

Result<std::shared_ptr<ClientCore>> ClientCore::OpenSpool(ClientOptions options,
                                                          const std::string& writer_dir) {
  std::string dir = writer_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::string writer = dir.substr(dir.rfind('/') + 1);
  options.mode = Mode::kOnline;
  options.heartbeat_interval_seconds = 0;
  std::shared_ptr<ClientCore> core(new ClientCore(std::move(options), writer));
  TW_RETURN_IF_ERROR(core->OpenSpoolDir(dir));
  core->Start();
  return core;
}

Status ClientCore::OpenSpoolDir(const std::string& dir) {
  SpoolOptions spool_options;
  spool_options.max_bytes = options_.spool_max_bytes;
  spool_options.segment_bytes = 1 << 20;
  spool_options.drop_oldest_when_full = options_.overflow == OverflowPolicy::kDropOldest;
  TW_ASSIGN_OR_RETURN(spool_, Spool::Open(PosixFileSystem(), dir, spool_options));
  return Status::Ok();
}

void ClientCore::Start() {
  MutexLock lock(close_mu_);
  outbox_ = std::make_unique<Outbox>(spool_.get(), options_.memory_max_bytes);
  batcher_ = std::thread([this] { BatcherLoop(); });
  if (options_.mode == Mode::kOnline) sender_ = std::thread([this] { SenderLoop(); });
}

ClientCore::~ClientCore() { Close(); }

void ClientCore::Enqueue(const Record& record) {
  if (closed()) return;
  if (queue_.TryPush(record)) {
    points_logged_.fetch_add(record.count, std::memory_order_relaxed);
    return;
  }
  switch (options_.overflow) {
    case OverflowPolicy::kDropOldest: {
      Record oldest;
      while (!queue_.TryPush(record)) {
        if (queue_.TryPop(&oldest))
          points_dropped_.fetch_add(oldest.count, std::memory_order_relaxed);
      }
      points_logged_.fetch_add(record.count, std::memory_order_relaxed);
      break;
    }
    case OverflowPolicy::kDropNewest:
      points_dropped_.fetch_add(record.count, std::memory_order_relaxed);
      points_logged_.fetch_add(record.count, std::memory_order_relaxed);
      break;
    case OverflowPolicy::kBlock:
      while (!queue_.TryPush(record)) {
        if (closed()) return;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      points_logged_.fetch_add(record.count, std::memory_order_relaxed);
      return;
  }
  {
    MutexLock lock(warn_mu_);
    double now = MonotonicNow();
    if (now - last_drop_warning_ < 10) return;
    last_drop_warning_ = now;
  }
  Warn(WarningKind::kPointsDropped, "the log buffer is full (" + std::to_string(queue_.capacity()) +
                                        " records): points are being dropped (" +
                                        std::to_string(points_dropped_.load()) + " so far)");
}

void ClientCore::AddRunBatch(v1::RunBatch batch, bool after_rows) {
  if (closed()) return;
  MutexLock lock(control_mu_);
  control_.emplace_back(std::move(batch), after_rows);
}

void ClientCore::RegisterRun(std::shared_ptr<RunState> run) {
  MutexLock lock(control_mu_);
  runs_.push_back(std::move(run));
}

void ClientCore::Warn(WarningKind kind, const std::string& message) {
  if (options_.on_warning) {
    options_.on_warning(kind, message);
  } else {
    std::fprintf(stderr, "trainwatch: warning: %s\n", message.c_str());
  }
}

bool ClientCore::Flush(double timeout_seconds, bool give_up_when_unreachable) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::microseconds(static_cast<int64_t>(timeout_seconds * 1e6));
  {
    MutexLock lock(control_mu_);
    if (batcher_stop_) return outbox_->Empty();
    uint64_t target = ++flush_requested_;
    control_cv_.notify_all();
    if (!control_cv_.wait_until(lock.native(), deadline, [&]() TW_REQUIRES(control_mu_) {
          return flush_done_ >= target || batcher_stop_;
        })) {
      return false;
    }
  }
  if (options_.mode == Mode::kOffline) return true;
  MutexLock lock(sender_mu_);
  const uint64_t failures_before = connect_failures_;
  if (give_up_when_unreachable && !connected_.load()) retry_now_ = true;  // try once more, now
  sender_cv_.notify_all();
  return acked_cv_.wait_until(lock.native(), deadline, [&]() TW_REQUIRES(sender_mu_) {
    return outbox_->Empty() || sender_stop_ ||
           (give_up_when_unreachable && !connected_.load() && connect_failures_ > failures_before);
  }) && outbox_->Empty();
}

void ClientCore::Close() {
  MutexLock close_lock(close_mu_);
  if (!batcher_.joinable() && !sender_.joinable()) return;  // closed before
  // The server may be away: then one more connection attempt decides, not the whole timeout.
  if (options_.mode == Mode::kOnline)
    Flush(options_.flush_timeout_seconds, /*give_up_when_unreachable=*/true);
  closed_.store(true);
  {
    MutexLock lock(control_mu_);
    batcher_stop_ = true;
  }
  control_cv_.notify_all();
  if (batcher_.joinable()) batcher_.join();
  {
    MutexLock lock(sender_mu_);
    sender_stop_ = true;
    if (connection_) connection_->Cancel();
  }
  sender_cv_.notify_all();
  acked_cv_.notify_all();
  if (sender_.joinable()) sender_.join();
  if (!spool_) return;
  Status s = outbox_->SpillMemory();
  if (!s.ok()) Warn(WarningKind::kSpool, "could not spool undelivered batches: " + s.ToString());
  bool left = spool_->segment_count() > 0;
  std::string dir = spool_->dir();
  s = spool_->Close();
  if (!s.ok()) Warn(WarningKind::kSpool, "closing the spool: " + s.ToString());
  if (left && options_.mode == Mode::kOnline) {
    Warn(WarningKind::kLeftInSpool,
         "not everything reached the server before exit; it is kept in " + dir +
             " — upload it with: trainwatch sync " + dir);
  }
}

ClientStats ClientCore::Stats() const {
  ClientStats stats;
  stats.points_logged = points_logged_.load();
  stats.points_acked = points_acked_.load();
  stats.points_dropped = points_dropped_.load();
  stats.points_spooled = points_spooled_.load();
  stats.batches_sent = batches_sent_.load();
  stats.batches_acked = batches_acked_.load();
  stats.batches_duplicate = batches_duplicate_.load();
  stats.reconnects = reconnects_.load();
  stats.spool_bytes = spool_ ? spool_->bytes() : 0;
  stats.memory_bytes = outbox_ ? outbox_->memory_bytes() : 0;
  stats.connected = connected_.load();
  MutexLock lock(sender_mu_);
  stats.transport = connected_ ? transport_ : "";
  stats.last_error = last_error_;
  return stats;
}

}  // namespace trainwatch::sdk
