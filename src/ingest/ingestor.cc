#include "ingest/ingestor.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "common/json.h"
#include "ingest/media_check.h"

namespace trainwatch::ingest {
namespace {

uint64_t CountPoints(const v1::RunBatch& batch) {
  uint64_t n = 0;
  for (const v1::MetricColumn& c : batch.metrics()) n += c.values_size();
  return n;
}

// Checks one histogram; `where` names it ("histograms[3]").
Status ValidateHistogram(const v1::Histogram& h, const IngestLimits& limits,
                         const std::string& where) {
  TW_RETURN_IF_ERROR(ValidateName("histogram", h.name(), limits).WithContext(where));
  if (h.step() < 0)
    return Status::InvalidArgument(where + ": step " + std::to_string(h.step()) + " is negative");
  if (!std::isfinite(h.time()) || h.time() < 0) {
    return Status::InvalidArgument(
        where + ": time is not a finite, non-negative time (0 means server time)");
  }
  const size_t buckets = h.counts_size();
  const size_t max_buckets = std::min(limits.max_histogram_buckets, storage::kMaxHistogramBuckets);
  if (buckets < 1 || buckets > max_buckets) {
    return Status::InvalidArgument(where + ": has " + std::to_string(buckets) + " buckets; 1 to " +
                                   std::to_string(max_buckets) + " are allowed");
  }
  if (static_cast<size_t>(h.edges_size()) != buckets + 1) {
    return Status::InvalidArgument(where + ": has " + std::to_string(h.edges_size()) +
                                   " edges for " + std::to_string(buckets) +
                                   " buckets; edges must be one more than counts");
  }
  for (int i = 0; i < h.edges_size(); ++i) {
    if (!std::isfinite(h.edges(i))) {
      return Status::InvalidArgument(where + ": edges[" + std::to_string(i) + "] is not finite");
    }
    if (i > 0 && !(h.edges(i) > h.edges(i - 1))) {
      return Status::InvalidArgument(where + ": edges are not strictly increasing at edges[" +
                                     std::to_string(i) + "]");
    }
  }
  for (int i = 0; i < h.counts_size(); ++i) {
    if (!std::isfinite(h.counts(i)) || h.counts(i) < 0) {
      return Status::InvalidArgument(where + ": counts[" + std::to_string(i) +
                                     "] is not a finite, non-negative number");
    }
  }
  return Status::Ok();
}

// Checks one run batch of a protobuf write; the first problem found is returned.
Status ValidateBatch(const v1::RunBatch& batch, const IngestLimits& limits) {
  TW_RETURN_IF_ERROR(ValidateName("run", batch.run(), limits));
  if (!batch.project().empty())
    TW_RETURN_IF_ERROR(ValidateName("project", batch.project(), limits));
  const int rows = batch.steps_size();
  for (int i = 0; i < rows; ++i) {
    if (batch.steps(i) < 0) {
      return Status::InvalidArgument("steps[" + std::to_string(i) + "] is negative");
    }
  }
  if (batch.times_size() != 0 && batch.times_size() != rows) {
    return Status::InvalidArgument("times has " + std::to_string(batch.times_size()) +
                                   " entries for " + std::to_string(rows) + " steps");
  }
  for (int i = 0; i < batch.times_size(); ++i) {
    if (!std::isfinite(batch.times(i)) || batch.times(i) < 0) {
      return Status::InvalidArgument("times[" + std::to_string(i) +
                                     "] is not a finite, non-negative time");
    }
  }
  std::unordered_set<std::string_view> names;
  for (int c = 0; c < batch.metrics_size(); ++c) {
    const v1::MetricColumn& column = batch.metrics(c);
    std::string where = "metrics[" + std::to_string(c) + "]";
    TW_RETURN_IF_ERROR(ValidateName("metric", column.name(), limits).WithContext(where));
    if (!names.insert(column.name()).second) {
      return Status::InvalidArgument(where + ": metric '" + column.name() + "' appears twice");
    }
    if (column.rows_size() == 0) {
      if (column.values_size() != rows) {
        return Status::InvalidArgument(where + ": dense column has " +
                                       std::to_string(column.values_size()) + " values for " +
                                       std::to_string(rows) + " steps");
      }
      continue;
    }
    if (column.rows_size() != column.values_size()) {
      return Status::InvalidArgument(where + ": rows and values differ in length");
    }
    for (uint32_t row : column.rows()) {
      if (row >= static_cast<uint32_t>(rows)) {
        return Status::InvalidArgument(where + ": row " + std::to_string(row) + " out of range");
      }
    }
  }
  for (int i = 0; i < batch.histograms_size(); ++i) {
    TW_RETURN_IF_ERROR(
        ValidateHistogram(batch.histograms(i), limits, "histograms[" + std::to_string(i) + "]"));
  }
  if (batch.has_rank()) {
    const v1::RankInfo& rank = batch.rank();
    constexpr uint32_t kMaxRank = (uint32_t{1} << 31) - 1;
    if (rank.rank() > kMaxRank) {
      return Status::InvalidArgument("rank.rank must be at most " + std::to_string(kMaxRank));
    }
    if (rank.world_size() > 0 && rank.rank() >= rank.world_size()) {
      return Status::InvalidArgument("rank.rank (" + std::to_string(rank.rank()) +
                                     ") must be below rank.world_size (" +
                                     std::to_string(rank.world_size()) + ")");
    }
    if (rank.world_size() > 0 && rank.local_rank() >= rank.world_size()) {
      return Status::InvalidArgument("rank.local_rank (" + std::to_string(rank.local_rank()) +
                                     ") must be below rank.world_size (" +
                                     std::to_string(rank.world_size()) + ")");
    }
    if (rank.host().size() > limits.max_name_bytes) {
      return Status::InvalidArgument("rank.host is longer than " +
                                     std::to_string(limits.max_name_bytes) + " bytes");
    }
  }
  if (batch.has_heartbeat()) {
    const double interval = batch.heartbeat().interval_seconds();
    if (!std::isfinite(interval) || interval <= 0 ||
        interval > limits.max_heartbeat_interval_seconds) {
      return Status::InvalidArgument(
          "heartbeat.interval_seconds must be in (0, " +
          std::to_string(static_cast<int>(limits.max_heartbeat_interval_seconds)) + "]");
    }
  }
  if (batch.has_metadata()) {
    const v1::RunMetadata& meta = batch.metadata();
    if (meta.has_name()) TW_RETURN_IF_ERROR(ValidateName("display", meta.name(), limits));
    if (meta.has_config_json()) {
      if (meta.config_json().size() > limits.max_metadata_bytes) {
        return Status::InvalidArgument("metadata.config_json is too large");
      }
      Result<nlohmann::json> j = ParseJson(meta.config_json());
      if (!j.ok()) return j.status().WithContext("metadata.config_json");
      if (!j->is_object())
        return Status::InvalidArgument("metadata.config_json is not a JSON object");
    }
    if (meta.has_graph_json()) {
      if (meta.graph_json().size() > limits.max_graph_bytes) {
        return Status::InvalidArgument(
            "metadata.graph_json is " + std::to_string(meta.graph_json().size()) +
            " bytes; the limit is " + std::to_string(limits.max_graph_bytes));
      }
      Result<nlohmann::json> j = ParseJson(meta.graph_json(), kMaxGraphJsonDepth);
      if (!j.ok()) return j.status().WithContext("metadata.graph_json");
      if (!j->is_object())
        return Status::InvalidArgument("metadata.graph_json is not a JSON object");
    }
    if (meta.has_rewind_step() && meta.rewind_step() < 0) {
      return Status::InvalidArgument("metadata.rewind_step is negative (" +
                                     std::to_string(meta.rewind_step()) + ")");
    }
    storage::RunStatus status;
    if (meta.has_status() && !storage::ParseRunStatus(meta.status(), &status)) {
      return Status::InvalidArgument("metadata.status '" + meta.status() +
                                     "' is not one of running, finished, crashed, stalled");
    }
    size_t tag_bytes = 0;
    for (const std::string& t : meta.tags()) tag_bytes += t.size();
    if (tag_bytes > limits.max_metadata_bytes || meta.host().size() > limits.max_metadata_bytes ||
        meta.group().size() > limits.max_metadata_bytes) {
      return Status::InvalidArgument("metadata is too large");
    }
  }
  return Status::Ok();
}

}  // namespace

Ingestor::Ingestor(storage::Engine& engine, Clock& clock, IngestLimits limits,
                   MetricsRegistry& metrics)
    : engine_(engine),
      clock_(clock),
      limits_(limits),
      lines_rejected_(
          metrics.AddCounter("trainwatch_rejected_lines_total", "JSON lines rejected as invalid.")),
      points_rejected_(metrics.AddCounter("trainwatch_rejected_points_total",
                                          "Points rejected as invalid or over a limit.")),
      points_received_(metrics.AddCounter("trainwatch_ingested_points_total",
                                          "Points accepted for storage, all transports.")) {}

void Ingestor::SetRefusal(Status refusal) {
  MutexLock lock(refusal_mu_);
  refusal_ = std::move(refusal);
}

void Ingestor::WriteJsonLines(std::string_view body, Done done,
                              const std::vector<std::string>& projects) {
  ParsedLines parsed = ParseJsonLines(body, clock_.NowUnixSeconds(), limits_);
  IngestResult result;
  result.lines_accepted = parsed.lines_accepted;
  result.lines_rejected = parsed.errors.size();
  result.errors = std::move(parsed.errors);
  lines_rejected_.Add(result.lines_rejected);
  KeepProjects(projects, &parsed.request, &result);
  MaskSecrets(&parsed.request);
  EnforceSeriesLimits(&parsed.request, &parsed.column_first_line, &result);
  Submit(std::move(parsed.request), std::move(result), std::move(done));
}

void Ingestor::WriteProto(v1::WriteRequest request, Done done,
                          const std::vector<std::string>& projects) {
  IngestResult result;
  Normalise(&request, &result);
  KeepProjects(projects, &request, &result);
  MaskSecrets(&request);
  EnforceSeriesLimits(&request, nullptr, &result);
  Submit(std::move(request), std::move(result), std::move(done));
}

void Ingestor::KeepProjects(const std::vector<std::string>& projects, v1::WriteRequest* request,
                            IngestResult* result) {
  if (projects.empty()) return;
  auto* runs = request->mutable_runs();
  for (int i = 0; i < runs->size();) {
    const v1::RunBatch& batch = (*runs)[i];
    const std::string project = batch.project().empty() ? "default" : batch.project();
    if (std::find(projects.begin(), projects.end(), project) != projects.end()) {
      ++i;
      continue;
    }
    result->errors.push_back(
        {0, "run '" + batch.run() + "': this key may not write to project '" + project + "'"});
    result->points_rejected += CountPoints(batch);
    points_rejected_.Add(CountPoints(batch));
    runs->DeleteSubrange(i, 1);
  }
}

void Ingestor::MaskSecrets(v1::WriteRequest* request) const {
  for (v1::RunBatch& batch : *request->mutable_runs()) {
    if (!batch.has_metadata()) continue;
    v1::RunMetadata* meta = batch.mutable_metadata();
    if (meta->has_config_json()) meta->set_config_json(masker_.MaskJsonText(meta->config_json()));
    for (std::string& tag : *meta->mutable_tags()) tag = masker_.MaskTag(tag);
  }
}

void Ingestor::Normalise(v1::WriteRequest* request, IngestResult* result) {
  auto* runs = request->mutable_runs();
  const double now = clock_.NowUnixSeconds();
  for (int i = 0; i < runs->size();) {
    v1::RunBatch& batch = (*runs)[i];
    Status s = ValidateBatch(batch, limits_);
    if (!s.ok()) {
      result->errors.push_back(
          {0, "runs[" + std::to_string(i) + "] (run '" + batch.run() + "'): " + s.message()});
      result->points_rejected += CountPoints(batch);
      runs->DeleteSubrange(i, 1);
      continue;
    }
    if (batch.project().empty()) batch.set_project("default");
    if (batch.times_size() == 0) {
      for (int r = 0; r < batch.steps_size(); ++r) batch.add_times(now);
    }
    for (v1::Histogram& h : *batch.mutable_histograms()) {
      if (h.time() == 0) h.set_time(now);
    }
    if (CheckMedia(&batch, i, limits_, now, &result->errors)) {
      runs->DeleteSubrange(i, 1);
      continue;
    }
    // Liveness is measured on the server's clock, recorded here so that replay restores it.
    if (batch.has_heartbeat()) batch.mutable_heartbeat()->set_received_time(now);
    ++i;
  }
}

void Ingestor::EnforceSeriesLimits(v1::WriteRequest* request,
                                   const std::vector<std::vector<uint64_t>>* first_lines,
                                   IngestResult* result) {
  std::unordered_map<std::string, size_t> added_per_project;
  for (int b = 0; b < request->runs_size(); ++b) {
    v1::RunBatch& batch = *request->mutable_runs(b);
    size_t run_metrics = engine_.MetricCountInRun(batch.project(), batch.run());
    auto* columns = batch.mutable_metrics();
    for (int c = 0, original = 0; c < columns->size(); ++original) {
      const v1::MetricColumn& column = (*columns)[c];
      if (engine_.SeriesExists({batch.project(), batch.run(), column.name()})) {
        ++c;
        continue;
      }
      size_t& added = added_per_project[batch.project()];
      std::string why;
      if (run_metrics + 1 > limits_.max_metrics_per_run) {
        why = "run '" + batch.run() + "' already has the maximum of " +
              std::to_string(limits_.max_metrics_per_run) + " metrics; metric '" + column.name() +
              "' was not created";
      } else if (engine_.SeriesCountInProject(batch.project()) + added + 1 >
                 limits_.max_series_per_project) {
        why = "project '" + batch.project() + "' already has the maximum of " +
              std::to_string(limits_.max_series_per_project) + " series; metric '" + column.name() +
              "' was not created";
      }
      if (why.empty()) {
        ++run_metrics;
        ++added;
        ++c;
        continue;
      }
      uint64_t line = first_lines ? (*first_lines)[b][original] : 0;
      result->errors.push_back({line, why});
      result->points_rejected += column.values_size();
      columns->DeleteSubrange(c, 1);
    }
  }
}

void Ingestor::Submit(v1::WriteRequest request, IngestResult result, Done done) {
  {
    MutexLock lock(refusal_mu_);
    if (!refusal_.ok()) {
      result.status = refusal_;
      done(std::move(result));
      return;
    }
  }
  points_rejected_.Add(result.points_rejected);
  if (request.runs_size() == 0) {
    done(std::move(result));
    return;
  }
  storage::Engine::WriteCallback written =
      [this, result = std::move(result), done = std::move(done)](
          const Status& status, const storage::WriteOutcome& outcome) mutable {
        result.status = status;
        if (status.ok()) {
          result.duplicate_batch = outcome.duplicate_batch;
          result.points_accepted = outcome.points_written + outcome.points_unchanged;
          result.points_unchanged = outcome.points_unchanged;
          result.series_rewound = outcome.series_rewound;
          points_received_.Add(result.points_accepted);
        }
        done(std::move(result));
      };
  if (sink_) {
    sink_(std::move(request), std::move(written));
  } else {
    engine_.Write(std::move(request), std::move(written));
  }
}

}  // namespace trainwatch::ingest
