#include "blob/s3_blob_backend.h"

#include <algorithm>
#include <cstdlib>

#include "common/strings.h"

namespace trainwatch::blob {

SigV4Credentials CredentialsFromEnvironment() {
  SigV4Credentials c;
  if (const char* v = std::getenv("AWS_ACCESS_KEY_ID")) c.access_key_id = v;
  if (const char* v = std::getenv("AWS_SECRET_ACCESS_KEY")) c.secret_access_key = v;
  if (const char* v = std::getenv("AWS_SESSION_TOKEN")) c.session_token = v;
  return c;
}

S3BlobBackend::S3BlobBackend(S3BlobOptions options, std::unique_ptr<S3Client> client,
                             storage::BlobStore& blobs, const Clock& clock, Logger& log,
                             MetricsRegistry& metrics)
    : options_(std::move(options)),
      client_(std::move(client)),
      blobs_(blobs),
      clock_(clock),
      log_(log),
      stats_(std::make_shared<Stats>()),
      uploads_(metrics.AddCounter("trainwatch_blob_s3_uploads_total",
                                  "Image blobs stored in the object store.")),
      upload_errors_(metrics.AddCounter("trainwatch_blob_s3_upload_errors_total",
                                        "Failed uploads of image blobs to the object store.")),
      reads_(metrics.AddCounter("trainwatch_blob_s3_reads_total",
                                "Image blobs read from the object store.")),
      read_errors_(metrics.AddCounter("trainwatch_blob_s3_read_errors_total",
                                      "Failed reads of image blobs from the object store.")) {
  metrics.AddGauge("trainwatch_blob_s3_pending",
                   "Image blobs acknowledged and held in the local store, waiting for upload to "
                   "the object store (as of the last upload pass).",
                   [stats = stats_] { return static_cast<double>(stats->pending.load()); });
}

Result<std::unique_ptr<S3BlobBackend>> S3BlobBackend::Start(S3BlobOptions options,
                                                            storage::BlobStore& blobs,
                                                            const Clock& clock, Logger& log,
                                                            MetricsRegistry& metrics) {
  TW_ASSIGN_OR_RETURN(std::unique_ptr<S3Client> client, S3Client::Create(options.s3, clock));
  if (!options.s3.verify_tls) {
    log.Warn("blob store: TLS certificate verification is off (--s3-tls-verify=false)");
  }
  if (Status s = client->CheckBucket(); !s.ok()) {
    log.Error("blob store: the object store is not usable yet; images are kept locally until it is",
              {{"error", s.ToString()}});
  } else {
    log.Info("blob store: image blobs go to the object store", {{"store", client->Describe()}});
  }
  std::unique_ptr<S3BlobBackend> backend(
      new S3BlobBackend(std::move(options), std::move(client), blobs, clock, log, metrics));
  blobs.SetRemote(backend.get());
  backend->thread_ = std::thread([b = backend.get()] { b->Loop(); });
  return backend;
}

S3BlobBackend::~S3BlobBackend() { Stop(); }

void S3BlobBackend::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  stopping_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  blobs_.SetRemote(nullptr);
}

void S3BlobBackend::Wake() {
  {
    MutexLock lock(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

Result<size_t> S3BlobBackend::UploadPending() {
  size_t moved = 0, left = 0;
  Status first_error;
  std::string after;
  for (;;) {
    TW_ASSIGN_OR_RETURN(auto batch, blobs_.LocalBlobs(after, options_.batch));
    if (batch.empty()) break;
    after = batch.back().first;
    for (const auto& [sha256, bytes] : batch) {
      if (!first_error.ok() || stopping_) {  // count what is left, try no more uploads
        ++left;
        continue;
      }
      Status s = client_->Put(LowerHex(sha256), bytes);
      if (s.ok()) s = blobs_.DropLocalBytes(sha256);
      if (!s.ok()) {
        upload_errors_.Add();
        first_error = s.WithContext("uploading image blob " + LowerHex(sha256));
        ++left;
        continue;
      }
      uploads_.Add();
      ++moved;
    }
    if (batch.size() < options_.batch) break;
  }
  stats_->pending.store(static_cast<int64_t>(left));
  if (!first_error.ok()) return first_error;
  return moved;
}

void S3BlobBackend::Loop() {
  double backoff = 0;
  MutexLock lock(mu_);
  for (;;) {
    const double wait = failing_ ? backoff : options_.upload_interval_seconds;
    if (clock_.WaitFor(lock.native(), cv_, wait,
                       [&]() TW_REQUIRES(mu_) { return stop_ || (wake_ && !failing_); })) {
      if (stop_) return;
    }
    wake_ = false;
    lock.Unlock();
    Result<size_t> moved = UploadPending();
    lock.Lock();
    if (!moved.ok()) {
      backoff = std::min(options_.max_backoff_seconds, backoff == 0 ? 1 : backoff * 2);
      if (!failing_) {
        log_.Error("blob store: upload failed; images stay in the local store and are retried",
                   {{"error", moved.status().ToString()}, {"retry_seconds", backoff}});
      }
      failing_ = true;
    } else {
      if (failing_) log_.Info("blob store: uploads resumed", {{"uploaded", *moved}});
      failing_ = false;
      backoff = 0;
    }
  }
}

Result<std::string> S3BlobBackend::ReadBlob(std::string_view sha256) const {
  reads_.Add();
  Result<std::string> bytes = client_->Get(LowerHex(sha256));
  if (!bytes.ok()) {
    read_errors_.Add();
    // Whatever the object store said, for the reader the blob is not available right now.
    return Status::Unavailable("reading image blob " + LowerHex(sha256) + ": " +
                               bytes.status().message());
  }
  if (Sha256Hex(*bytes) != LowerHex(sha256)) {
    read_errors_.Add();
    return Status::Corruption("image blob " + LowerHex(sha256) + " in " + client_->Describe() +
                              " does not hash to its name");
  }
  return bytes;
}

}  // namespace trainwatch::blob
