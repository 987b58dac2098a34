// ClientCore: the sender thread (connect, send in order, back off) and the per-connection reader
// thread (acks).
#include <algorithm>
#include <chrono>
#include <cmath>

#include "client_core.h"

namespace trainwatch::sdk {

double ClientCore::NextBackoff() {
  // Exponential with "equal jitter": half the delay fixed, half random, so clients that lost the
  // server together do not come back together.
  double delay = std::min(options_.backoff_max_seconds, options_.backoff_initial_seconds *
                                                            std::pow(2.0, std::min(failures_, 30)));
  ++failures_;
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  return delay * jitter(rng_);
}

void ClientCore::SenderLoop() {
  ConnectOptions connect;
  connect.server = options_.server;
  connect.grpc_target = options_.grpc_target;
  connect.api_key = options_.api_key;
  connect.tls_ca_file = options_.tls_ca_file;
  connect.tls_cert_file = options_.tls_cert_file;
  connect.tls_key_file = options_.tls_key_file;
  connect.transport = options_.transport;
  connect.request_timeout_seconds = options_.ack_timeout_seconds;
  std::unique_ptr<Connection> connection;
  std::thread reader;
  double next_attempt = 0;
  double down_since = 0;
  for (;;) {
    {
      MutexLock lock(sender_mu_);
      if (sender_stop_) break;
    }
    if (!connection) {
      double now = MonotonicNow();
      if (now < next_attempt) {
        MutexLock lock(sender_mu_);
        sender_cv_.wait_for(lock.native(), std::chrono::duration<double>(next_attempt - now),
                            [&]() TW_REQUIRES(sender_mu_) { return sender_stop_ || retry_now_; });
        if (!retry_now_) continue;
      }
      {
        MutexLock lock(sender_mu_);
        retry_now_ = false;
      }
      auto connected = Connect(connect);
      if (!connected.ok()) {
        next_attempt = MonotonicNow() + NextBackoff();
        if (down_since == 0) down_since = now;
        bool warn;
        {
          MutexLock lock(sender_mu_);
          last_error_ = connected.status().message();
          warn = !warned_unreachable_;
          warned_unreachable_ = true;
          ++connect_failures_;
          acked_cv_.notify_all();
        }
        if (warn) {
          Warn(WarningKind::kServerUnreachable,
               "cannot reach the trainwatch server at " + options_.server + " (" +
                   connected.status().message() +
                   "); training continues, and what is logged is kept" +
                   (spool_ ? " in " + spool_->dir() : std::string(" in memory")) +
                   " and sent when it is back");
        }
        continue;
      }
      connection = std::move(*connected);
      outbox_->Rewind();
      {
        MutexLock lock(sender_mu_);
        in_flight_.clear();
        broken_ = false;
        connection_ = connection.get();
        transport_ = connection->name();
        warned_unreachable_ = false;  // a later outage warns again
      }
      if (failures_ > 0 || down_since > 0) reconnects_.fetch_add(1);
      failures_ = 0;
      down_since = 0;
      connected_.store(true);
      reader = std::thread([this, c = connection.get()] { ReaderLoop(c); });
    }
    // Send what the window allows: a pending heartbeat, then batches in sequence order.
    bool failed = false;
    std::string heartbeat;
    {
      MutexLock lock(sender_mu_);
      heartbeat.swap(heartbeat_);
      if (!heartbeat.empty()) in_flight_.push_back(InFlight{true, 0, 0, MonotonicNow()});
    }
    if (!heartbeat.empty() && !connection->Send(heartbeat, 0)) failed = true;
    while (!failed) {
      {
        MutexLock lock(sender_mu_);
        size_t batches = std::count_if(in_flight_.begin(), in_flight_.end(),
                                       [](const InFlight& f) { return !f.heartbeat; });
        if (batches >= kWindow || broken_) break;
      }
      Status error;
      std::optional<OutboxBatch> batch = outbox_->NextUnsent(&error);
      if (!batch) {
        if (!error.ok()) Warn(WarningKind::kSpool, "reading the spool: " + error.ToString());
        break;
      }
      {
        MutexLock lock(sender_mu_);
        in_flight_.push_back(InFlight{false, batch->sequence, batch->points, MonotonicNow()});
      }
      batches_sent_.fetch_add(1);
      if (!connection->Send(*batch->bytes, batch->sequence)) failed = true;
    }
    MutexLock lock(sender_mu_);
    if (!failed && !broken_) {
      sender_cv_.wait_for(lock.native(), std::chrono::milliseconds(50));
    }
    if (failed || broken_) {
      lock.Unlock();
      Disconnect(connection, reader);
      next_attempt = MonotonicNow() + NextBackoff();
      down_since = MonotonicNow();
    }
  }
  if (connection) Disconnect(connection, reader);
}

void ClientCore::Disconnect(std::unique_ptr<Connection>& connection, std::thread& reader) {
  connection->Cancel();
  if (reader.joinable()) reader.join();
  std::string why = connection->Error();
  {
    MutexLock lock(sender_mu_);
    if (!broken_ || last_error_.empty()) last_error_ = why;
    connection_ = nullptr;
    in_flight_.clear();
    broken_ = false;
  }
  connected_.store(false);
  connection.reset();
}

void ClientCore::ReaderLoop(Connection* connection) {
  v1::WriteAck ack;
  while (connection->ReadAck(&ack)) {
    std::vector<std::string> rejections;
    {
      MutexLock lock(sender_mu_);
      if (in_flight_.empty()) {
        last_error_ = "an acknowledgement nobody waited for";
        break;
      }
      InFlight front = in_flight_.front();
      if (front.heartbeat) {
        in_flight_.pop_front();
        sender_cv_.notify_all();
        continue;
      }
      if (ack.refused()) {
        last_error_ = ack.errors_size() > 0 ? ack.errors(0) : "the server refused a batch";
        break;
      }
      if (ack.sequence() != front.sequence || !outbox_->Ack(front.sequence)) {
        last_error_ = "acknowledgement out of order: got " + std::to_string(ack.sequence()) +
                      ", expected " + std::to_string(front.sequence);
        break;
      }
      in_flight_.pop_front();
      points_acked_.fetch_add(front.points);
      batches_acked_.fetch_add(1);
      if (ack.duplicate()) batches_duplicate_.fetch_add(1);
      rejections.assign(ack.errors().begin(), ack.errors().end());
      sender_cv_.notify_all();
      acked_cv_.notify_all();
    }
    if (!rejections.empty()) {
      std::string message;
      {
        MutexLock lock(warn_mu_);
        if (rejection_warnings_ >= 10) continue;
        ++rejection_warnings_;
        message = "the server rejected part of a batch: " + rejections.front();
        if (rejections.size() > 1)
          message += " (and " + std::to_string(rejections.size() - 1) + " more)";
        if (rejection_warnings_ == 10) message += "; further rejections are not reported";
      }
      // Without warn_mu_: the callback may log, and Log takes warn_mu_ when the buffer is full.
      Warn(WarningKind::kPointsRejected, message);
    }
  }
  MutexLock lock(sender_mu_);
  broken_ = true;
  sender_cv_.notify_all();
}

}  // namespace trainwatch::sdk
