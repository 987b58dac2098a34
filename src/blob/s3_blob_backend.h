// S3BlobBackend: image blobs in an S3-compatible object store (--blob-store s3://bucket/prefix,
// docs/blob_store.md). An image is acknowledged once it is durable in the write-ahead log, as
// every write is; when applied, its bytes land in the store's "b" family as with the embedded blob
// store (the store is synced before the log forgets them). A background thread then PUTs each
// such blob to the bucket under prefix/<sha256 hex> and, once the object store answered 200,
// drops the local bytes; the blob's reference record stays in the store, and reads of a blob
// whose bytes left go to the bucket (RemoteBlobs). So an unreachable endpoint never refuses or
// slows a write: blobs wait locally (trainwatch_blob_s3_pending) and are uploaded, with backoff,
// when it is back.
//
// Objects are never deleted from the bucket (a deleted image's object stays): dropping local
// bytes is then safe whatever OnPut and Release do meanwhile (blob_store.h).
//
// Thread-safety: thread-safe. Stop (or the destructor) before the BlobStore goes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <string>
#include <thread>

#include "blob/s3_client.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "common/mutex.h"
#include "storage/blob_store.h"
#include "storage/s3_remote_blobs.h"

namespace trainwatch::blob {

struct S3BlobOptions {
  S3Options s3;
  double upload_interval_seconds = 1;  // a pass this often at least (and at once on Wake)
  double max_backoff_seconds = 60;     // after failed passes: 1 s, 2 s, 4 s, ... up to this
  size_t batch = 64;                   // blobs read from the store at a time
};

// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (optional) from the environment.
SigV4Credentials CredentialsFromEnvironment();

class S3BlobBackend : public storage::RemoteBlobs {
 public:
  // Checks the options, makes `blobs` read moved blobs through this backend and starts the upload
  // thread. The bucket is probed once: a failure is logged (blobs then wait locally), not fatal.
  // `blobs`, `clock`, `log` and `metrics` must outlive the backend.
  static Result<std::unique_ptr<S3BlobBackend>> Start(S3BlobOptions options,
                                                      storage::BlobStore& blobs, const Clock& clock,
                                                      Logger& log, MetricsRegistry& metrics);
  ~S3BlobBackend() override;
  S3BlobBackend(const S3BlobBackend&) = delete;
  S3BlobBackend& operator=(const S3BlobBackend&) = delete;

  // Stops the upload thread (a PUT in flight finishes) and detaches from the BlobStore. Idempotent.
  void Stop();
  // New blobs may be waiting: a pass starts now unless the last one failed (then at its backoff).
  // Cheap; callable from the engine's commit listener.
  void Wake();
  // One pass: uploads every blob held locally and drops its local bytes. Returns how many moved;
  // the first failure ends the pass with its error. Used by the thread and by tests.
  Result<size_t> UploadPending();

  // storage::RemoteBlobs: GET prefix/<hex>; the bytes must hash to `sha256` (else Corruption).
  Result<std::string> ReadBlob(std::string_view sha256) const override;

 private:
  S3BlobBackend(S3BlobOptions options, std::unique_ptr<S3Client> client, storage::BlobStore& blobs,
                const Clock& clock, Logger& log, MetricsRegistry& metrics);
  void Loop();

  struct Stats {
    std::atomic<int64_t> pending{0};  // blobs held locally at the end of the last pass
  };

  const S3BlobOptions options_;
  std::unique_ptr<S3Client> client_;
  storage::BlobStore& blobs_;
  const Clock& clock_;
  Logger& log_;
  std::shared_ptr<Stats> stats_;  // shared with the metrics registry's gauge
  Counter& uploads_;
  Counter& upload_errors_;
  Counter& reads_;
  Counter& read_errors_;

  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ TW_GUARDED_BY(mu_) = false;
  bool wake_ TW_GUARDED_BY(mu_) = false;
  bool failing_ TW_GUARDED_BY(mu_) = false;
  std::atomic<bool> stopping_{false};  // ends a pass early
  std::thread thread_;
};

}  // namespace trainwatch::blob
