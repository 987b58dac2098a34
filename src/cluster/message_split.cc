#include "cluster/message_split.h"

#include <algorithm>
#include <string>
#include <utility>

namespace trainwatch::cluster {
namespace {

using v1::RunBatch;

// A batch's bytes inside a WriteRequest: its own, its field tag and its length.
size_t SizeIn(const RunBatch& b) { return b.ByteSizeLong() + 12; }

// A batch of the same run that carries nothing yet.
RunBatch Shell(const RunBatch& b) {
  RunBatch s;
  s.set_project(b.project());
  s.set_run(b.run());
  if (b.has_rank()) *s.mutable_rank() = b.rank();
  s.set_sampled(b.sampled());
  return s;
}

// Rows [from, to) of `b`: their steps and times, and each metric column's values of those rows
// (renumbered from 0 where the column names its rows).
RunBatch Rows(const RunBatch& b, int from, int to) {
  RunBatch s = Shell(b);
  const bool timed = b.times_size() == b.steps_size();
  for (int i = from; i < to; ++i) {
    s.add_steps(b.steps(i));
    if (timed) s.add_times(b.times(i));
  }
  for (const v1::MetricColumn& column : b.metrics()) {
    v1::MetricColumn out;
    out.set_name(column.name());
    if (column.rows_size() == 0) {  // dense: one value per row
      for (int i = from; i < to && i < column.values_size(); ++i) out.add_values(column.values(i));
    } else {
      for (int k = 0; k < column.rows_size() && k < column.values_size(); ++k) {
        const int row = static_cast<int>(column.rows(k));
        if (row < from || row >= to) continue;
        out.add_rows(static_cast<uint32_t>(row - from));
        out.add_values(column.values(k));
      }
    }
    if (out.values_size() > 0) *s.add_metrics() = std::move(out);
  }
  return s;
}

Status TooLarge(const std::string& what, size_t bytes, size_t limit) {
  return Status::InvalidArgument(
      what + " takes " + std::to_string(bytes) + " bytes, more than one cluster message carries (" +
      std::to_string(limit) + " bytes: the NATS servers' max_payload); raise max_payload");
}

// `b`, larger than `limit`, as pieces of the same run under it: its histograms, images and texts
// in groups, then its rows in step ranges; the last piece gets the metadata and the heartbeat.
Result<std::vector<RunBatch>> SplitBatch(const RunBatch& b, size_t limit) {
  std::vector<RunBatch> pieces;
  const std::string of_run = " of run " + b.run();
  const size_t shell_bytes = SizeIn(Shell(b));
  RunBatch media = Shell(b);
  size_t media_piece_bytes = shell_bytes;  // of `media`: its items with their tags and lengths
  size_t media_bytes = 0;                  // of every item taken
  auto flush_media = [&] {
    if (media.histograms_size() + media.images_size() + media.texts_size() == 0) return;
    pieces.push_back(std::move(media));
    media = Shell(b);
    media_piece_bytes = shell_bytes;
  };
  // Adds each of `items` (histograms, images or texts) to the media piece in progress, starting
  // another when one would not fit (8: more than an item's tag and length take).
  auto take_all = [&](const auto& items, const char* kind, auto add) -> Status {
    for (const auto& item : items) {
      const size_t bytes = item.ByteSizeLong();
      if (shell_bytes + bytes + 8 > limit) {
        return TooLarge(std::string(kind) + " " + item.name() + " at step " +
                            std::to_string(item.step()) + of_run,
                        bytes, limit);
      }
      if (media_piece_bytes + bytes + 8 > limit) flush_media();
      *add(media) = item;
      media_piece_bytes += bytes + 8;
      media_bytes += bytes;
    }
    return Status::Ok();
  };
  TW_RETURN_IF_ERROR(
      take_all(b.histograms(), "histogram", [](RunBatch& m) { return m.add_histograms(); }));
  TW_RETURN_IF_ERROR(take_all(b.images(), "image", [](RunBatch& m) { return m.add_images(); }));
  TW_RETURN_IF_ERROR(take_all(b.texts(), "text", [](RunBatch& m) { return m.add_texts(); }));
  flush_media();

  const int n = b.steps_size();
  if (n > 0) {
    // The rows' share of the batch: what is left without its media, metadata and heartbeat.
    const size_t rest =
        SizeIn(b) - media_bytes - b.metadata().ByteSizeLong() - b.heartbeat().ByteSizeLong();
    const double per_row = static_cast<double>(rest) / n;
    const int guess = std::max(1, static_cast<int>(0.9 * static_cast<double>(limit) / per_row));
    for (int from = 0; from < n;) {
      int to = std::min(n, from + guess);
      RunBatch slice = Rows(b, from, to);
      while (SizeIn(slice) > limit && to - from > 1) {
        to = from + (to - from) / 2;
        slice = Rows(b, from, to);
      }
      if (SizeIn(slice) > limit) {
        return TooLarge("the row at step " + std::to_string(b.steps(from)) + of_run, SizeIn(slice),
                        limit);
      }
      pieces.push_back(std::move(slice));
      from = to;
    }
  }

  if (b.has_metadata() || b.has_heartbeat()) {
    RunBatch tail = Shell(b);
    if (b.has_metadata()) *tail.mutable_metadata() = b.metadata();
    if (b.has_heartbeat()) *tail.mutable_heartbeat() = b.heartbeat();
    if (SizeIn(tail) > limit) return TooLarge("the metadata" + of_run, SizeIn(tail), limit);
    const size_t extra = SizeIn(tail) - shell_bytes;
    if (!pieces.empty() && SizeIn(pieces.back()) + extra <= limit) {
      if (b.has_metadata()) *pieces.back().mutable_metadata() = b.metadata();
      if (b.has_heartbeat()) *pieces.back().mutable_heartbeat() = b.heartbeat();
    } else {
      pieces.push_back(std::move(tail));
    }
  }
  return pieces;
}

}  // namespace

Result<std::vector<v1::WriteRequest>> SplitForMessages(const v1::WriteRequest& request,
                                                       size_t limit) {
  std::vector<v1::WriteRequest> out;
  if (request.ByteSizeLong() <= limit) {
    out.push_back(request);
    return out;
  }
  v1::WriteRequest current;
  auto add = [&](RunBatch b) {
    if (current.runs_size() > 0 && current.ByteSizeLong() + SizeIn(b) > limit) {
      out.push_back(std::move(current));
      current = v1::WriteRequest();
    }
    *current.add_runs() = std::move(b);
  };
  for (const RunBatch& b : request.runs()) {
    if (SizeIn(b) <= limit) {
      add(b);
      continue;
    }
    TW_ASSIGN_OR_RETURN(std::vector<RunBatch> pieces, SplitBatch(b, limit));
    for (RunBatch& piece : pieces) add(std::move(piece));
  }
  if (current.runs_size() > 0) out.push_back(std::move(current));
  return out;
}

}  // namespace trainwatch::cluster
