// Limits on what one client may send or create; each violation is a clear error to that client.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace trainwatch::ingest {

struct IngestLimits {
  uint64_t max_body_bytes = 64ull << 20;
  size_t max_name_bytes = 256;           // project, run and metric names
  size_t max_metrics_per_run = 10'000;   // distinct metric names in one run
  size_t max_series_per_project = 1'000'000;
  size_t max_metadata_bytes = 64 << 10;  // config JSON, tags, host of one run update
  size_t max_graph_bytes = 8 << 20;      // a run's model graph (RunMetadata.graph_json)
  size_t max_histogram_buckets = 10'000;  // at most storage::kMaxHistogramBuckets
  // One encoded image (RunBatch.images); it must also fit in a request (max_body_bytes) with
  // whatever else its batch holds.
  uint64_t max_image_bytes = 16ull << 20;
  size_t max_caption_bytes = 16 << 10;
  size_t max_text_bytes = 1 << 20;  // one text (RunBatch.texts)
  double max_heartbeat_interval_seconds = 3600;
};

// Checks a project, run or metric name: non-empty, at most max_name_bytes, valid UTF-8, no control
// characters. `what` names the field in the error ("run", "metric").
Status ValidateName(std::string_view what, std::string_view name, const IngestLimits& limits);

}  // namespace trainwatch::ingest
