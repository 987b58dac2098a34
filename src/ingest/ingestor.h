// Ingestor: the one door into the store. Validates and normalises a write from any transport (HTTP
// JSON lines, HTTP protobuf, gRPC), enforces the limits, and hands what is valid to the engine,
// which acknowledges once it is durable. Invalid parts are reported, never stored, and never stop
// the valid parts. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/metrics_registry.h"
#include "common/mutex.h"
#include "common/secrets.h"
#include "ingest/json_lines.h"
#include "ingest/limits.h"
#include "storage/engine.h"

namespace trainwatch::ingest {

struct IngestResult {
  Status status;  // non-OK: nothing of this write is durable (log failure, shutdown, full disk)
  uint64_t lines_accepted = 0;  // JSON lines only
  uint64_t lines_rejected = 0;
  // Scalar points stored or identical to what was stored. Histograms, images, texts, graphs and
  // heartbeats are not points and are not counted here (nor in points_rejected).
  uint64_t points_accepted = 0;
  uint64_t points_unchanged = 0;  // of those, identical to what the step held (retries)
  uint64_t points_rejected = 0;
  bool duplicate_batch = false;
  uint64_t series_rewound = 0;  // series a RunMetadata.rewind_step cut
  std::vector<LineError> errors;
};

class Ingestor {
 public:
  using Done = std::function<void(IngestResult)>;

  Ingestor(storage::Engine& engine, Clock& clock, IngestLimits limits, MetricsRegistry& metrics);
  Ingestor(const Ingestor&) = delete;
  Ingestor& operator=(const Ingestor&) = delete;

  const IngestLimits& limits() const { return limits_; }

  // `done` runs exactly once, possibly on another thread, possibly before this returns.
  // `projects`: the only projects the writer's key may write (empty: any); runs of others are
  // refused with an error naming them, the rest of the write goes on.
  void WriteJsonLines(std::string_view body, Done done,
                      const std::vector<std::string>& projects = {});
  void WriteProto(v1::WriteRequest request, Done done,
                  const std::vector<std::string>& projects = {});

  // When set (by the disk guard), every write is refused with this status.
  void SetRefusal(Status refusal);
  // Config entries and tags whose keys match are masked before they are stored (default:
  // SecretMasker's patterns). Call before serving.
  void SetSecretMasker(SecretMasker masker) { masker_ = std::move(masker); }
  // Cluster mode (docs/cluster.md): validated writes go to `sink` (the cluster's publisher)
  // instead of the engine; it calls back as Engine::Write does. Call before serving.
  using Sink = std::function<void(v1::WriteRequest, storage::Engine::WriteCallback)>;
  void SetSink(Sink sink) { sink_ = std::move(sink); }

 private:
  // Drops invalid run batches and columns from `request`, recording why, and fills defaults.
  void Normalise(v1::WriteRequest* request, IngestResult* result);
  void MaskSecrets(v1::WriteRequest* request) const;
  void KeepProjects(const std::vector<std::string>& projects, v1::WriteRequest* request,
                    IngestResult* result);
  // Drops columns that would create more series than the limits allow.
  void EnforceSeriesLimits(v1::WriteRequest* request,
                           const std::vector<std::vector<uint64_t>>* first_lines,
                           IngestResult* result);
  void Submit(v1::WriteRequest request, IngestResult result, Done done);

  storage::Engine& engine_;
  Clock& clock_;
  const IngestLimits limits_;
  SecretMasker masker_;
  Sink sink_;
  Mutex refusal_mu_;
  Status refusal_ TW_GUARDED_BY(refusal_mu_);
  Counter& lines_rejected_;
  Counter& points_rejected_;
  Counter& points_received_;
};

}  // namespace trainwatch::ingest
