// Series: the points of one (project, run, metric), in memory and in sealed chunks.
//
// Timelines. A point at a step that already holds a different visible value starts a new timeline
// from that step (a restart from a checkpoint): the series' generation is bumped, a Rewind{gen,
// step} is recorded, and every older point at that step or later becomes superseded — hidden from
// normal reads, still retrievable. Writing an identical value (same bits) is a no-op; writing into
// an empty step fills it in, in or out of order.
//
// A sealed chunk records the generation at which it was sealed; its points are hidden by every
// later rewind whose step is <= theirs. This is summarised per chunk as `hidden_from_step`.
//
// The run clock. Every run has one hidden series, kClockMetric, holding the time of each step the
// first time it was written (first write wins, never rewound). A chunk whose points' times all
// equal the clock's stores no times at all: one time column per run instead of one per metric.
//
// Thread-safety: all members are guarded by `mu`. The single applier thread takes it exclusively to
// write; readers take it shared.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "storage/encoding/point.h"
#include "storage/series_key.h"

namespace trainwatch::storage {

struct Rewind {
  uint32_t gen = 0;  // the generation this rewind started
  int64_t step = 0;  // points of older generations at this step or later are hidden
};

// A sealed chunk, or one being sealed. Points stay in memory (`points`) until the chunk is
// persisted.
struct ChunkRef {
  uint32_t chunk_no = 0;    // per series, increasing in seal order
  uint32_t gen = 0;         // series generation when sealed; superseded: the one its points had
  bool superseded = false;  // holds points a rewind hid while they were still in memory
  // The encoded chunk stores no times: each point's time is the run clock's at its step.
  bool times_from_clock = false;
  int64_t hidden_from_step = std::numeric_limits<int64_t>::max();
  Summary summary;
  std::shared_ptr<const std::vector<Point>> points;  // set until persisted
  uint64_t encoded_bytes = 0;                        // 0 until persisted

  bool FullyVisible() const { return !superseded && summary.last_step < hidden_from_step; }
  bool FullyHidden() const { return superseded || summary.first_step >= hidden_from_step; }
};

struct SupersededRun {
  uint32_t gen = 0;
  std::vector<Point> points;
};

enum class ApplyOutcome { kAppended, kFilledIn, kDuplicate, kRewound };

// The run clock's metric name. Control characters are refused in user metric names, so it cannot
// collide with one.
inline const std::string kClockMetric = "\x01clock";

class Series {
 public:
  Series(SeriesId id, SeriesKey key) : id_(id), key_(std::move(key)) {}
  Series(const Series&) = delete;
  Series& operator=(const Series&) = delete;

  SeriesId id() const { return id_; }
  const SeriesKey& key() const { return key_; }

  mutable SharedMutex mu;

  // --- state, guarded by mu ---
  uint32_t gen TW_GUARDED_BY(mu) = 0;
  std::vector<Rewind> rewinds TW_GUARDED_BY(mu);
  std::vector<ChunkRef> chunks TW_GUARDED_BY(mu);  // in seal order
  std::vector<Point> head TW_GUARDED_BY(mu);       // visible, unsealed points, sorted by step
  // Points a rewind hid while they were in the head, awaiting sealing: one entry per rewind (its
  // hidden suffix, sorted), labelled with the generation in effect until that rewind.
  std::vector<SupersededRun> superseded TW_GUARDED_BY(mu);
  uint64_t flushed_lsn TW_GUARDED_BY(mu) = 0;  // every record <= this is in persisted chunks
  bool has_latest TW_GUARDED_BY(mu) = false;
  Point latest TW_GUARDED_BY(mu);  // the visible point with the highest step
  uint32_t next_chunk_no TW_GUARDED_BY(mu) = 0;
  // The run's clock series; nullptr for the clock itself. Set once, before the series is shared.
  Series* clock = nullptr;

  bool is_clock() const { return key_.metric == kClockMetric; }

  // Republishes `latest`/`has_latest` for lock-free readers (a seqlock). The writer calls it with
  // mu held exclusively, after changing them.
  void PublishLatest() TW_REQUIRES(mu);
  // The last published latest point; false if there is none. Lock-free; any thread.
  bool ReadLatest(Point* out) const;

  // Adds `p` to the head at `at` (the end: AppendToHead), growing its buffer by an eighth (at
  // least kMinHeadGrowth points) instead of doubling it. A distributed run holds one head per
  // (rank, metric), 51,200 for 1,024 ranks x 50 metrics, each until the next checkpoint: doubling
  // left up to half of every head's buffer unused (bench/ranks_storage_probe.cc). Caller holds mu
  // exclusively.
  void AppendToHead(const Point& p) TW_REQUIRES(mu) { InsertIntoHead(head.end(), p); }
  void InsertIntoHead(std::vector<Point>::iterator at, const Point& p) TW_REQUIRES(mu);
  // Makes room for `more` points at once (a batch's column), so that a large batch grows the
  // buffer once rather than by eighths. Caller holds mu exclusively.
  void ReserveHead(size_t more) TW_REQUIRES(mu);
  static constexpr size_t kMinHeadGrowth = 4;

  // Records a rewind at `step` as generation gen+1: hides head points at or after it (moving them
  // to the superseded buffers) and marks sealed chunks. Caller holds mu exclusively.
  void RewindAt(int64_t step) TW_REQUIRES(mu);

 private:
  const SeriesId id_;
  const SeriesKey key_;
  // The seqlock behind PublishLatest/ReadLatest: odd while a publication is in progress.
  std::atomic<uint64_t> latest_seq_{0};
  std::atomic<bool> published_has_{false};
  std::atomic<int64_t> published_step_{0};
  std::atomic<uint64_t> published_time_bits_{0};
  std::atomic<uint64_t> published_value_bits_{0};
};

}  // namespace trainwatch::storage
