// The events of one TensorBoard run, turned into SDK calls on one trainwatch run: the part that
// `trainwatch import` and `trainwatch watch` share (what maps to what: docs/tensorboard.md).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "tfevents/event.h"
#include "tfevents/event_file_reader.h"
#include "tfevents/record_reader.h"
#include "tfevents/summary.h"
#include "tag_steps.h"
#include "trainwatch/client.h"

namespace trainwatch::tools {

struct ImportCounts {
  uint64_t files = 0;
  uint64_t bytes = 0;    // bytes of records consumed (complete and corrupt)
  uint64_t records = 0;  // complete records
  uint64_t points = 0;   // scalar values sent
  uint64_t histograms = 0;
  uint64_t images = 0;
  uint64_t texts = 0;
  uint64_t graphs = 0;
  uint64_t session_starts = 0;  // SessionLog START events (restarts)
  uint64_t steps_back = 0;      // scalar values at a step below their tag's newest (purges)
  uint64_t rewinds_failed = 0;  // of both, the ones whose rewind the server did not confirm
  uint64_t corrupt = 0;         // corrupt stretches skipped
  uint64_t corrupt_bytes = 0;
  uint64_t bad_events = 0;    // records whose CRCs matched but whose Event did not decode
  uint64_t value_errors = 0;  // summary values that were malformed (the event's others were kept)
  std::map<std::string, uint64_t> skipped;  // values not imported, by what they were

  void Add(const ImportCounts& o);
};

// Feeds one run's records, in file order, to a trainwatch::Run:
//  - the scalars of consecutive events with the same step go out as one Log call, at the wall
//    time of the first of those events (one record per step: what detectors and rules see);
//  - histograms, images, text and the graph as their own SDK calls, each with its event's time;
//  - a SessionLog START at step S flushes what is pending, is counted, and calls `rewind(S)`,
//    which must return once every series of the run has started a new timeline at S (so that
//    the points before the START stay before the rewind, and the ones after it after):
//    TensorBoard's purge of the steps >= S (docs/tensorboard.md#restarts);
//  - a scalar at a step below the newest one its tag was sent at makes its row wait for
//    `rewind_series(S, tags)`, which must return once those series have started a new timeline at
//    the row's step S; then the row goes out: TensorBoard's per-tag purge, which hides the tag's
//    later points even where the new value equals the old (docs/tensorboard.md#steps-that-go-backwards).
// Problems (corrupt records, malformed values) go to `report` as "file:offset: what" lines.
// Not thread-safe.
class RunSink {
 public:
  using Reporter = std::function<void(const std::string&)>;
  // Rewinds the run on the server at a step (see above); an error is reported and counted.
  using Rewinder = std::function<Status(int64_t step)>;
  // Rewinds only the named series of the run at a step (see above); an error is reported and counted.
  using SeriesRewinder = std::function<Status(int64_t step, const std::vector<std::string>& series)>;
  RunSink(Run* run, Reporter report, Rewinder rewind, SeriesRewinder rewind_series)
      : run_(*run),
        report_(std::move(report)),
        rewind_(std::move(rewind)),
        rewind_series_(std::move(rewind_series)),
        decoder_(&plugins_) {}

  void OnRecord(std::string_view file, uint64_t offset, std::string_view record);
  void OnCorrupt(std::string_view file, const tfevents::RecordResult& r);
  // Sends the pending step's scalars. Call at the end of every file and before waiting for acks.
  void FlushPending();
  // Copies the pending step's tags out of the records: call before the records' buffer changes.
  void DetachPending();

  ImportCounts& counts() { return counts_; }
  tfevents::TagPlugins& plugins() { return plugins_; }
  // Each scalar tag's newest step sent (watch keeps them in its state across restarts).
  TagSteps& tag_steps() { return tag_steps_; }
  // Wall times of the first and last event seen (0 before any).
  double first_wall_time() const { return first_wall_time_; }
  double last_wall_time() const { return last_wall_time_; }

 private:
  void HandleSummary(std::string_view file, uint64_t offset, const tfevents::EventView& ev);
  void HandleGraph(std::string_view file, uint64_t offset, std::string_view graph_def,
                   bool from_meta_graph);
  void HandleSessionStart(std::string_view file, uint64_t offset, int64_t step);
  void AddScalar(std::string_view file, uint64_t offset, int64_t step, double wall_time,
                 std::string_view tag, double value);
  // The series of the pending row whose step went backwards, rewound at the row's step.
  void RewindPendingSeries();
  bool PendingHas(std::string_view tag, uint64_t hash) const;

  Run& run_;
  Reporter report_;
  Rewinder rewind_;
  SeriesRewinder rewind_series_;
  tfevents::TagPlugins plugins_;
  TagSteps tag_steps_;
  tfevents::SummaryDecoder decoder_;
  tfevents::DecodedSummary decoded_;
  ImportCounts counts_;
  double first_wall_time_ = 0;
  double last_wall_time_ = 0;
  bool have_graph_def_ = false;

  // The step being gathered. Tags are views into the records they came from, valid until the
  // reader's buffer changes: DetachPending copies them first.
  struct PendingScalar {
    std::string_view tag;
    double value;
    uint64_t hash;
    int64_t* newest;  // the tag's slot in tag_steps_
    bool goes_back;   // the tag was sent at a later step: its series is rewound first
  };
  int64_t pending_step_ = 0;
  double pending_time_ = 0;
  std::vector<PendingScalar> pending_;
  std::string pending_back_where_;  // "file:offset" of the row's first value that went back, or ""
  std::vector<std::string> rewound_series_;
  std::deque<std::string> detached_;  // owns detached tags; a deque keeps them in place as it grows
  std::vector<Metric> metrics_;
};

// Feeds `sink` every record `reader` can read now, then flushes the pending step. `display` names
// the file in reports. Returns the bytes of an incomplete record left at the end (0 when the file
// ends at a record boundary): a writer is still writing it.
Result<uint64_t> DrainFile(tfevents::EventFileReader& reader, std::string_view display,
                           RunSink& sink);

}  // namespace trainwatch::tools
