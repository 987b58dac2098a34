// Cadence: how often one run logs training records, learned as they arrive (dense, sparse, a dense
// prefix then sparse, irregular). It converts the step windows of the detectors into the records
// that cover them, and tells a change of cadence (per-step logging for the first steps, then every
// N steps) from an ordinary gap, so that a baseline of per-step values is not compared with a
// value logged hundreds of steps later as if it were the next step.
//
// Thread-safety: none; owned by one RunDetector.
#pragma once

#include <array>
#include <cstdint>

namespace trainwatch::detect {

// The fewest records a persistence rule counts at any cadence: one record of a sparse log may
// cover the whole persistence in steps, but one alone is never evidence that something persists.
inline constexpr int64_t kMinPersistRecords = 2;
// A run logging training records at least this many steps apart is sparse: one record may be a
// whole episode.
inline constexpr int64_t kSparseInterval = 10;

class Cadence {
 public:
  // One training record's step gap since the previous training record (>= 1). Returns true when
  // it starts a new, sparser cadence: the gap is at least kSwitchRatio x the median of the recent
  // gaps and at least kSwitchMinSteps steps.
  bool Observe(int64_t gap);

  // The median step gap of the recent training records; 1 before any gap was seen.
  int64_t interval() const { return interval_; }
  bool sparse() const { return interval_ >= kSparseInterval; }
  // Records that cover `steps` steps at the current interval, clamped to [min_records, max(steps, min_records)].
  int64_t RecordsFor(int64_t steps, int64_t min_records) const;

  static constexpr int64_t kSwitchRatio = 10;
  static constexpr int64_t kSwitchMinSteps = 10;

 private:
  static constexpr int kGaps = 9;
  std::array<int64_t, kGaps> gaps_{};
  int count_ = 0;
  int next_ = 0;
  int64_t interval_ = 1;
};

}  // namespace trainwatch::detect
