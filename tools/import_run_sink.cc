#include "import_run_sink.h"

#include <algorithm>

#include "tfevents/graph.h"
#include "tfevents/tag_hash.h"

namespace trainwatch::tools {
namespace {

// The server refuses larger graphs (docs/api.md, metadata.graph_json).
constexpr size_t kMaxGraphJsonBytes = 8u << 20;

std::string Where(std::string_view file, uint64_t offset) {
  return std::string(file) + ":" + std::to_string(offset);
}

}  // namespace

void ImportCounts::Add(const ImportCounts& o) {
  files += o.files;
  bytes += o.bytes;
  records += o.records;
  points += o.points;
  histograms += o.histograms;
  images += o.images;
  texts += o.texts;
  graphs += o.graphs;
  session_starts += o.session_starts;
  steps_back += o.steps_back;
  rewinds_failed += o.rewinds_failed;
  corrupt += o.corrupt;
  corrupt_bytes += o.corrupt_bytes;
  bad_events += o.bad_events;
  value_errors += o.value_errors;
  for (const auto& [what, n] : o.skipped) skipped[what] += n;
}

void RunSink::OnCorrupt(std::string_view file, const tfevents::RecordResult& r) {
  ++counts_.corrupt;
  counts_.corrupt_bytes += r.consumed;
  counts_.bytes += r.consumed;
  report_(tfevents::DescribeCorruption(file, r));
}

void RunSink::OnRecord(std::string_view file, uint64_t offset, std::string_view record) {
  ++counts_.records;
  counts_.bytes += record.size() + tfevents::kRecordHeaderBytes + tfevents::kRecordFooterBytes;
  tfevents::EventView ev;
  if (Status s = tfevents::DecodeEvent(record, &ev); !s.ok()) {
    ++counts_.bad_events;
    report_(Where(file, offset) + ": " + s.message());
    return;
  }
  if (ev.wall_time > 0) {
    if (first_wall_time_ == 0) first_wall_time_ = ev.wall_time;
    last_wall_time_ = std::max(last_wall_time_, ev.wall_time);
  }
  switch (ev.kind) {
    case tfevents::EventKind::kSummary:
      HandleSummary(file, offset, ev);
      return;
    case tfevents::EventKind::kGraphDef:
      HandleGraph(file, offset, ev.payload, false);
      return;
    case tfevents::EventKind::kMetaGraphDef: {
      if (have_graph_def_) return;  // a GraphDef of its own wins, as in TensorBoard
      Result<std::string_view> graph = tfevents::GraphDefOfMetaGraph(ev.payload);
      if (!graph.ok()) {
        ++counts_.bad_events;
        report_(Where(file, offset) + ": " + graph.status().message());
      } else if (!graph->empty()) {
        HandleGraph(file, offset, *graph, true);
      }
      return;
    }
    case tfevents::EventKind::kSessionLog:
      if (ev.session_status == tfevents::SessionStatus::kStart)
        HandleSessionStart(file, offset, ev.step);
      return;
    case tfevents::EventKind::kFileVersion:
      if (!ev.payload.starts_with("brain.Event:"))
        report_(Where(file, offset) + ": unexpected file_version '" + std::string(ev.payload) +
                "'");
      return;
    case tfevents::EventKind::kOther:
      ++counts_.skipped["log_message/tagged_run_metadata events"];
      return;
    case tfevents::EventKind::kEmpty:
      return;
  }
}

void RunSink::HandleSummary(std::string_view file, uint64_t offset, const tfevents::EventView& ev) {
  decoded_.Clear();
  if (Status s = decoder_.Decode(ev.payload, &decoded_); !s.ok()) {
    ++counts_.bad_events;
    report_(Where(file, offset) + ": " + s.message());
    return;
  }
  for (const tfevents::ValueError& e : decoded_.errors) {
    ++counts_.value_errors;
    report_(Where(file, offset) + ": tag '" + e.tag + "': " + e.message);
  }
  for (const tfevents::SkippedValue& s : decoded_.skipped) ++counts_.skipped[s.what];
  if (ev.step < 0) {  // trainwatch steps are >= 0
    const size_t n = decoded_.scalars.size() + decoded_.histograms.size() + decoded_.images.size() +
                     decoded_.texts.size();
    if (n > 0) {
      counts_.value_errors += n;
      report_(Where(file, offset) + ": step " + std::to_string(ev.step) +
              " is negative: " + std::to_string(n) + " values not imported");
    }
    return;
  }
  for (const tfevents::ScalarValue& s : decoded_.scalars)
    AddScalar(file, offset, ev.step, ev.wall_time, s.tag, s.value);
  for (tfevents::HistogramValue& h : decoded_.histograms) {
    run_.LogHistogram(ev.step, h.tag,
                      HistogramBuckets{std::move(h.buckets.edges), std::move(h.buckets.counts)},
                      ev.wall_time);
    ++counts_.histograms;
  }
  for (const tfevents::ImageValue& im : decoded_.images) {
    run_.LogImage(ev.step, im.tag, std::string(im.encoded), {}, im.index, ev.wall_time);
    ++counts_.images;
  }
  for (const tfevents::TextValue& t : decoded_.texts) {
    run_.LogText(ev.step, t.tag, t.text, ev.wall_time);
    ++counts_.texts;
  }
}

void RunSink::HandleSessionStart(std::string_view file, uint64_t offset, int64_t step) {
  FlushPending();
  ++counts_.session_starts;
  step = std::max<int64_t>(step, 0);  // steps are >= 0 here: "before step 0" hides everything
  if (Status s = rewind_(step); !s.ok()) {
    ++counts_.rewinds_failed;
    report_(Where(file, offset) + ": SessionLog START at step " + std::to_string(step) +
            ": the run's points at steps >= " + std::to_string(step) +
            " were not hidden: " + s.message());
  }
  tag_steps_.RewindAll(step);  // nothing at `step` or later is visible now: no tag goes back there
}

void RunSink::HandleGraph(std::string_view file, uint64_t offset, std::string_view graph_def,
                          bool from_meta_graph) {
  Result<std::vector<tfevents::GraphNode>> nodes = tfevents::DecodeGraphDef(graph_def);
  if (!nodes.ok()) {
    ++counts_.bad_events;
    report_(Where(file, offset) + ": " + nodes.status().message());
    return;
  }
  std::string json = tfevents::GraphToJson(*nodes);
  if (json.size() > kMaxGraphJsonBytes) {
    ++counts_.skipped["graphs over 8 MiB of JSON"];
    report_(Where(file, offset) + ": graph of " + std::to_string(nodes->size()) + " nodes is " +
            std::to_string(json.size() >> 20) +
            " MiB as JSON, over the server's 8 MiB: not imported");
    return;
  }
  if (!from_meta_graph) have_graph_def_ = true;
  run_.SetGraph(std::move(json));
  ++counts_.graphs;
}

bool RunSink::PendingHas(std::string_view tag, uint64_t hash) const {
  for (const PendingScalar& p : pending_) {
    if (p.hash == hash && p.tag == tag) return true;
  }
  return false;
}

void RunSink::AddScalar(std::string_view file, uint64_t offset, int64_t step, double wall_time,
                        std::string_view tag, double value) {
  const uint64_t h = tfevents::TagHash(tag);
  // A new step, or a tag repeated within the step (its later value must follow the earlier one).
  if (!pending_.empty() && (step != pending_step_ || PendingHas(tag, h))) FlushPending();
  if (pending_.empty()) {
    pending_step_ = step;
    pending_time_ = wall_time;
  }
  int64_t& newest = tag_steps_.Slot(tag);  // after the flush above: every earlier row is counted
  const bool back = TagSteps::GoesBack(newest, step);
  if (back && pending_back_where_.empty()) pending_back_where_ = Where(file, offset);
  pending_.push_back({tag, value, h, &newest, back});
}

void RunSink::RewindPendingSeries() {
  rewound_series_.clear();
  for (const PendingScalar& p : pending_) {
    if (p.goes_back) rewound_series_.emplace_back(p.tag);
  }
  if (rewound_series_.empty()) return;
  counts_.steps_back += rewound_series_.size();
  if (Status s = rewind_series_(pending_step_, rewound_series_); !s.ok()) {
    counts_.rewinds_failed += rewound_series_.size();
    report_(pending_back_where_ + ": step " + std::to_string(pending_step_) + " goes back for " +
            std::to_string(rewound_series_.size()) + " tag(s) ('" + rewound_series_.front() +
            "'...): their points at steps >= " + std::to_string(pending_step_) +
            " were not hidden: " + s.message());
  }
  pending_back_where_.clear();
}

void RunSink::DetachPending() {
  for (PendingScalar& p : pending_) p.tag = detached_.emplace_back(p.tag);
}

void RunSink::FlushPending() {
  if (pending_.empty()) return;
  RewindPendingSeries();  // before the row: its points are the new timeline
  metrics_.clear();
  for (const PendingScalar& p : pending_) {
    metrics_.push_back(Metric{p.tag, p.value});
    // After a purge the tag's newest step is this one; otherwise the newest of the two.
    *p.newest = p.goes_back ? pending_step_ : std::max(*p.newest, pending_step_);
  }
  run_.Log(pending_step_, metrics_, pending_time_);
  counts_.points += pending_.size();
  pending_.clear();
  detached_.clear();
}

Result<uint64_t> DrainFile(tfevents::EventFileReader& reader, std::string_view display,
                           RunSink& sink) {
  while (true) {
    const tfevents::RecordResult r = reader.Next();
    if (r.status == tfevents::RecordStatus::kRecord) {
      sink.OnRecord(display, r.offset, r.data);
    } else if (r.status == tfevents::RecordStatus::kCorrupt) {
      sink.OnCorrupt(display, r);
    } else {
      sink.DetachPending();  // Fill() moves the bytes the pending tags point into
      TW_ASSIGN_OR_RETURN(size_t more, reader.Fill());
      if (more == 0) break;
    }
  }
  sink.FlushPending();
  return reader.pending_bytes();
}

}  // namespace trainwatch::tools
