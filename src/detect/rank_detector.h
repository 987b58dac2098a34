// RankDetector: the detectors of a distributed run that compare its ranks (docs/distributed.md,
// docs/detectors.md "Distributed runs"): `straggler`, `rank_desync`, `rank_dead`,
// `collective_hang`, and `nan` attributed to the rank(s) that showed it first.
//
// Rows reach it rank by rank in arrival order: ranks send their batches independently, so rank 3's
// step 100 may come before rank 1's step 99. Comparisons at one step (straggler, replicated
// metrics, nan) wait until every live rank has sent a later step. Pure: no clock, no I/O. Every
// time is handed in: `time` is a row's own timestamp (the writer's clock: only differences of one
// rank's times are used), `arrival` and `now` are on one clock the caller chooses (the server's
// receipt time online; offline, where there is none, the rows' times stand in). rank_dead and
// collective_hang are judged only by Check(now).
//
// State: per rank O(1) plus three rings of 16 intervals; per step not yet complete, one value per
// rank of the time-to-collective and the replicated metrics (at most kMaxPendingValues values).
// A rank that said the world size is W makes the comparisons wait until W ranks have been seen.
// At most kMaxRanks ranks are watched; rows of further ranks are ignored.
//
// Thread-safety: none; one owner calls it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "detect/alert.h"
#include "detect/metric_bindings.h"
#include "detect/options.h"

namespace trainwatch::detect {

// Which process of a distributed run wrote a batch (the wire's RankInfo).
struct RankId {
  uint32_t rank = 0;
  uint32_t world_size = 0;
  uint32_t local_rank = 0;
  std::string_view host;
};

class RankDetector {
 public:
  static constexpr size_t kMaxRanks = 16384;
  // Values waiting for the other ranks' values of their step; beyond either bound the oldest step
  // is compared with what it has.
  static constexpr size_t kMaxPendingSteps = 1 << 16;
  static constexpr size_t kMaxPendingValues = 1 << 20;
  // A non-finite row waits at most this long (on the arrival clock) for the other ranks' rows of
  // its step before `nan` is attributed to the ranks seen so far.
  static constexpr double kNanWaitSeconds = 5;

  // `options` must outlive the detector (the RunDetector's, reassigned in place by a reload).
  RankDetector(const std::string& run, const DetectorOptions& options)
      : run_(run), options_(options) {}
  RankDetector(const RankDetector&) = delete;
  RankDetector& operator=(const RankDetector&) = delete;

  // One row of `id`'s rank: all its metrics of one step (names borrowed for the call only).
  // `arrival`: when the batch holding it arrived (NaN: use `time`).
  void Observe(const RankId& id, int64_t step, double time, double arrival, MetricSpan metrics,
               std::vector<Alert>* out);
  // After each batch of `id`'s rank (its rows, if any, observed first): the rank was heard from at
  // `arrival` (NaN: at its last row's time); `heartbeat_interval` > 0 when the batch carried a
  // heartbeat. Judges its step lag and the steps every live rank has passed.
  void Heard(const RankId& id, double arrival, double heartbeat_interval, std::vector<Alert>* out);
  // The rank said it finished: it is no longer expected to write.
  void Finished(uint32_t rank);
  // rank_dead, collective_hang, and a `nan` that waited long enough, at `now` (arrival clock).
  void Check(double now, std::vector<Alert>* out);

  // Whether every rank seen has finished (the run is over).
  bool AllFinished() const {
    for (const Rank& r : ranks_) {
      if (!r.finished) return false;
    }
    return true;
  }
  // Whether any ranked row or batch was seen (the run is distributed).
  bool distributed() const { return !ranks_.empty(); }

 private:
  // A ring of the last kRing positive values, with their median.
  struct Ring {
    static constexpr size_t kRing = 16;
    std::array<double, kRing> values{};
    size_t count = 0, next = 0;
    void Add(double v);
    double Median() const;  // NaN when empty
  };
  struct Rank {
    uint32_t rank = 0, world_size = 0, local_rank = 0;
    std::string host;
    bool has_step = false, finished = false;
    int64_t latest_step = 0;
    double latest_time = NAN;       // the latest row's own timestamp
    double last_seen = NAN;         // arrival of its last row or heartbeat
    double last_advance = NAN;      // arrival of the row that raised latest_step
    double heartbeat_interval = 0;  // the last heartbeat's; 0: none seen
    double min_delay = INFINITY;  // least arrival - row time seen: the rank's usual delivery delay
    bool behind_late = false;     // its last batch was a backlog (delayed rows)
    Ring step_seconds;            // seconds per step between its consecutive rows
    Ring record_seconds;          // seconds between its consecutive rows (distinct steps)
    Ring step_gaps;               // steps between its consecutive rows
    // Incidents of this rank.
    // straggler: the verdicts of its last straggler_window steps (bit 0 the newest) and their
    // steps.
    uint32_t straggler_bits = 0;
    std::array<int64_t, 32> straggler_steps{};
    int64_t straggler_seen = 0, straggler_clear = 0;
    bool straggler_open = false;
    int64_t lag_run = 0, desync_clear = 0;
    bool desync_open = false, lag_holding = false, metric_holding = false;
    bool dead_open = false;
    int64_t finite_run = 0;  // consecutive finite training rows (nan resolution)
  };
  // Values of one step not yet compared: (slot, value) per rank that logged it.
  struct StepCell {
    std::vector<std::pair<uint32_t, double>> ttc;
    std::map<std::string, std::vector<std::pair<uint32_t, double>>, std::less<>> replicated;
  };
  // Whether a replicated metric was seen equal across ranks (then it is judged), or not.
  enum class Replication { kUnknown, kEqual, kUnequal };
  struct ReplicatedState {
    Replication state = Replication::kUnknown;
    int64_t run = 0;  // consecutive steps over desync_rel
    int64_t onset = 0;
  };

  Rank* SlotFor(const RankId& id);
  bool Live(const Rank& r) const { return r.has_step && !r.finished && !r.dead_open; }
  double DeadThreshold(const Rank& r) const;
  double StepSeconds() const;  // median over ranks of their seconds per step; NaN when unknown
  void Emit(AlertKind kind, const Rank* rank, std::string_view metric, int64_t step, double time,
            double value, std::string message, std::vector<Alert>* out);
  void Resolve(AlertKind kind, const Rank* rank, std::string_view metric, int64_t step, double time,
               std::vector<Alert>* out);
  void Lag(Rank& r, std::vector<Alert>* out);
  void CompleteSteps(bool force_all, std::vector<Alert>* out);
  void CompareStep(int64_t step, const StepCell& cell, std::vector<Alert>* out);
  void Straggler(int64_t step, const std::vector<std::pair<uint32_t, double>>& values,
                 std::vector<Alert>* out);
  void ReplicatedMetric(int64_t step, const std::string& name,
                        const std::vector<std::pair<uint32_t, double>>& values,
                        std::vector<Alert>* out);
  void DesyncObserved(Rank& r, int64_t step, double time, std::vector<Alert>* out);
  void NanRow(Rank& r, int64_t step, double time, double arrival, std::string_view bad, bool finite,
              std::vector<Alert>* out);
  void ReleaseNan(bool timed_out, double now, std::vector<Alert>* out);

  const std::string& run_;
  const DetectorOptions& options_;
  std::vector<Rank> ranks_;
  std::unordered_map<uint32_t, uint32_t> slot_of_;  // rank -> index in ranks_
  std::map<int64_t, StepCell> pending_;
  size_t pending_values_ = 0;
  uint32_t world_size_ = 0;  // the largest world size a rank said
  std::map<std::string, ReplicatedState, std::less<>> replicated_;
  std::vector<double> scratch_;
  // nan: the earliest non-finite step seen while no nan incident is open, and its ranks.
  std::optional<int64_t> nan_step_;
  std::set<uint32_t> nan_ranks_;
  std::string nan_metric_;
  double nan_since_ = NAN, nan_time_ = NAN;
  bool nan_open_ = false;
  uint32_t nan_slot_ = 0;       // the open nan's rank
  std::set<uint32_t> nan_bad_;  // slots not yet finite for resolve_records rows since it opened
  // collective_hang.
  bool hang_open_ = false;
  int64_t hang_step_ = 0;
};

}  // namespace trainwatch::detect
