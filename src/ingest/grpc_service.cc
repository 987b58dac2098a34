#include "ingest/grpc_service.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <thread>

namespace trainwatch::ingest {
namespace {

v1::WriteAck MakeAck(const v1::WriteRequest& request, const IngestResult& result) {
  v1::WriteAck ack;
  ack.set_writer_id(request.writer_id());
  ack.set_sequence(request.sequence());
  ack.set_points_accepted(result.points_accepted);
  ack.set_points_rejected(result.points_rejected);
  ack.set_duplicate(result.duplicate_batch);
  ack.set_refused(!result.status.ok());
  if (!result.status.ok()) ack.add_errors(result.status.ToString());
  for (const LineError& e : result.errors) ack.add_errors(e.message);
  return ack;
}

// The address of a gRPC peer: "ipv4:10.0.0.7:51234" -> "10.0.0.7", "ipv6:[::1]:51234" -> "::1".
std::string PeerAddress(const std::string& peer) {
  std::string_view p = peer;
  if (size_t colon = p.find(':'); colon != std::string_view::npos) p.remove_prefix(colon + 1);
  if (p.starts_with('[')) return std::string(p.substr(1, p.find(']') - 1));
  return std::string(p.substr(0, p.rfind(':')));
}

}  // namespace

grpc::Status IngestService::Admit(const grpc::ServerContext& context, const std::string& peer,
                                  auth::Principal* writer) const {
  if (!allow_from_.empty() && !allow_from_.Contains(peer)) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "clients from " + peer + " are not allowed");
  }
  if (!keys_ || !keys_->enabled()) return grpc::Status::OK;
  auto it = context.client_metadata().find("authorization");
  std::string_view sent;
  if (it != context.client_metadata().end())
    sent = std::string_view(it->second.data(), it->second.size());
  if (!sent.starts_with("Bearer "))
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing API key");
  Result<auth::Principal> principal = keys_->Authenticate(sent.substr(7));
  if (!principal.ok())
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, principal.status().message());
  writer->key_name = principal->key_name;  // named in the audit entry even when refused below
  if (!principal->Allows(auth::Scope::kWrite)) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "key '" + principal->key_name + "' has scope " +
                            std::string(auth::ScopeName(principal->scope)) +
                            "; writing needs write");
  }
  if (!principal->allow_from.empty() && !principal->allow_from.Contains(peer)) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "key '" + principal->key_name + "' may not be used from " + peer);
  }
  *writer = std::move(*principal);
  return grpc::Status::OK;
}

void IngestService::Audit(auth::AuditEntry entry, bool wait) {
  if (!audit_) return;
  if (!wait) {
    audit_->Append(std::move(entry), [] {});
    return;
  }
  std::promise<void> durable;
  audit_->Append(std::move(entry), [&durable] { durable.set_value(); });
  durable.get_future().wait();
}

grpc::Status IngestService::Write(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::WriteAck, v1::WriteRequest>* stream) {
  const std::string peer = PeerAddress(context->peer());
  auth::Principal writer;
  const grpc::Status admitted = Admit(*context, peer, &writer);
  auth::AuditEntry opened{.time = 0,
                          .key = writer.key_name,
                          .remote = peer,
                          .action = "gRPC Ingest/Write",
                          .target = "stream opened",
                          .outcome = 200,
                          .detail = ""};
  if (!admitted.ok()) {
    opened.outcome = admitted.error_code() == grpc::StatusCode::UNAUTHENTICATED ? 401 : 403;
    opened.detail = admitted.error_message();
    Audit(std::move(opened), /*wait=*/true);
    return admitted;
  }
  Audit(std::move(opened), /*wait=*/true);  // before any batch can be acknowledged
  uint64_t batches = 0, points_accepted = 0, points_rejected = 0;  // written by the acker only
  {
    MutexLock lock(streams_mu_);
    if (draining_)
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
    streams_.insert(context);
  }
  struct Unregister {
    IngestService* service;
    grpc::ServerContext* context;
    ~Unregister() {
      MutexLock lock(service->streams_mu_);
      service->streams_.erase(context);
    }
  } unregister{this, context};
  // What the reading loop below and the acker share.
  struct Acks {
    Mutex mu;
    std::condition_variable cv;
    std::deque<std::future<v1::WriteAck>> pending TW_GUARDED_BY(mu);  // in arrival order
    bool reading_done TW_GUARDED_BY(mu) = false;
    bool failed TW_GUARDED_BY(mu) = false;  // a durability failure
  } acks;

  // Writes acks in arrival order as each batch completes.
  std::thread acker([&] {
    for (;;) {
      std::future<v1::WriteAck> next;
      {
        MutexLock lock(acks.mu);
        acks.cv.wait(lock.native(), [&]() TW_REQUIRES(acks.mu) {
          return !acks.pending.empty() || acks.reading_done;
        });
        if (acks.pending.empty()) return;
        next = std::move(acks.pending.front());
      }
      v1::WriteAck ack = next.get();
      ++batches;
      points_accepted += ack.points_accepted();
      points_rejected += ack.points_rejected();
      bool ok = stream->Write(ack);
      {
        MutexLock lock(acks.mu);
        acks.pending.pop_front();
        if (!ok) acks.failed = true;
      }
      acks.cv.notify_all();
    }
  });

  v1::WriteRequest request;
  bool stopped_on_refusal = false;
  StatusCode refusal = StatusCode::kOk;  // why, when stopped_on_refusal
  while (stream->Read(&request)) {
    {
      MutexLock lock(acks.mu);
      acks.cv.wait(lock.native(), [&]() TW_REQUIRES(acks.mu) {
        return acks.pending.size() < kMaxInFlight || acks.failed;
      });
      if (acks.failed) break;
    }
    auto promise = std::make_shared<std::promise<v1::WriteAck>>();
    {
      MutexLock lock(acks.mu);
      acks.pending.push_back(promise->get_future());
    }
    acks.cv.notify_all();
    v1::WriteRequest header;  // writer id and sequence, kept for the ack
    header.set_writer_id(request.writer_id());
    header.set_sequence(request.sequence());
    auto refused = std::make_shared<std::atomic<StatusCode>>(StatusCode::kOk);
    ingestor_.WriteProto(
        std::move(request),
        [promise, header, refused](IngestResult result) {
          refused->store(result.status.code());
          promise->set_value(MakeAck(header, result));
        },
        writer.projects);
    request.Clear();
    // A refusal decided at once (shutdown, full disk) ends the stream: applying a later batch of
    // this writer would make the refused one look like a duplicate when it is resent. Refusals that
    // come later (the log failed under a group) make the engine hold back this writer's later
    // batches until the refused one is resent.
    if (refused->load() != StatusCode::kOk) {
      stopped_on_refusal = true;
      refusal = refused->load();
      break;
    }
  }
  {
    MutexLock lock(acks.mu);
    acks.reading_done = true;
  }
  acks.cv.notify_all();
  acker.join();
  Audit({.time = 0,
         .key = writer.key_name,
         .remote = peer,
         .action = "gRPC Ingest/Write",
         .target = "stream closed: " + std::to_string(batches) + " batches, " +
                   std::to_string(points_accepted) + " points accepted, " +
                   std::to_string(points_rejected) + " rejected",
         .outcome = !stopped_on_refusal                         ? 200
                    : refusal == StatusCode::kResourceExhausted ? 507
                                                                : 503,
         .detail = ""},
        /*wait=*/false);
  if (context->IsCancelled()) return grpc::Status::CANCELLED;
  if (stopped_on_refusal && refusal == StatusCode::kResourceExhausted) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "the server's disk is full; resend the refused batch once it has room");
  }
  if (stopped_on_refusal) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the server refused a batch; resend it later");
  }
  return grpc::Status::OK;
}

void IngestService::CancelAll() {
  MutexLock lock(streams_mu_);
  draining_ = true;
  for (grpc::ServerContext* context : streams_) context->TryCancel();
}

}  // namespace trainwatch::ingest
