// IngestService: the gRPC ingest stream (trainwatch.v1.Ingest/Write), the SDK's default transport.
//
// Each WriteRequest on a stream is validated and submitted at once; up to kMaxInFlight batches per
// stream are in flight, and their acks go back in the order the batches came, each once durable.
#pragma once

#include <set>

#include "auth/audit_log.h"
#include "auth/key_store.h"
#include "common/mutex.h"
#include "ingest/ingestor.h"
#include "trainwatch/v1/ingest.grpc.pb.h"

namespace trainwatch::ingest {

class IngestService final : public v1::Ingest::Service {
 public:
  static constexpr size_t kMaxInFlight = 64;

  // When `keys` holds any key, a key of write scope must arrive as `authorization: Bearer <key>`
  // metadata; a project-bound key writes only its projects. Null: no keys.
  // Streams from addresses outside a non-empty `allow_from` are refused (PERMISSION_DENIED).
  // With an audit log, every stream is recorded: refused ones (key, address, why), and accepted
  // ones when they open — durably, before the first batch is read, so that whatever a stream had
  // acknowledged is in the log after a crash — and when they end, with their batch and point
  // counts.
  IngestService(Ingestor& ingestor, const auth::KeyStore* keys, CidrList allow_from = {},
                auth::AuditLog* audit = nullptr)
      : ingestor_(ingestor), keys_(keys), allow_from_(std::move(allow_from)), audit_(audit) {}

  grpc::Status Write(grpc::ServerContext* context,
                     grpc::ServerReaderWriter<v1::WriteAck, v1::WriteRequest>* stream) override;

  // Ends every open stream and refuses new ones (server shutdown). A stream waits for its client's
  // next batch indefinitely, so without this an idle SDK would hold a shutdown up until its
  // deadline. Batches in flight still complete; a client resends whatever it saw no ack for.
  void CancelAll();

 private:
  // Who may open the stream: OK with *writer set, or the refusal.
  grpc::Status Admit(const grpc::ServerContext& context, const std::string& peer,
                     auth::Principal* writer) const;
  // Appends an audit entry; with `wait`, returns once it is durable.
  void Audit(auth::AuditEntry entry, bool wait);

  Ingestor& ingestor_;
  const auth::KeyStore* const keys_;
  const CidrList allow_from_;
  auth::AuditLog* const audit_;
  Mutex streams_mu_;
  std::set<grpc::ServerContext*> streams_ TW_GUARDED_BY(streams_mu_);
  bool draining_ TW_GUARDED_BY(streams_mu_) = false;
};

}  // namespace trainwatch::ingest
