// Per-step entries: what a run logs once per (name, step) besides scalar points — histograms,
// images and texts. The three kinds are stored, indexed, read, deleted with their run and aged out
// by one path (StepEntryStore in the store, Engine's step-entry functions in the engine); a
// StepEntryKind says what differs: its key prefixes, whether its key carries an index, how to read
// an entry's time, and whether its entries refer to shared blobs (docs/format/store.md).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "common/status.h"

namespace trainwatch::storage {

enum class StepEntryType : uint8_t { kHistogram = 0, kImage = 1, kText = 2 };
inline constexpr size_t kStepEntryTypes = 3;
inline constexpr std::array<StepEntryType, kStepEntryTypes> kAllStepEntryTypes = {
    StepEntryType::kHistogram, StepEntryType::kImage, StepEntryType::kText};

struct StepEntryKind {
  StepEntryType type;
  std::string_view noun;  // "histogram", "image", "text": listings (MetricInfo::kind) and errors
  char entry_prefix;      // "h", "i", "t": one key per entry
  char summary_prefix;    // "H", "I", "T": one key per (run, name)
  // The entry key ends with a big-endian u32 index after the step (images: several per step).
  bool indexed;
  // Entries hold references to blobs ("B"): they are deleted one by one (releasing them), never by
  // a range deletion.
  bool holds_references;
  // The time of an encoded value, without decoding the rest (retention). Corruption if the value
  // is too short or of an unknown version.
  Result<double> (*time_of)(std::string_view value);
};

const StepEntryKind& KindOf(StepEntryType type);

// The summary of one (run, name) of a kind: the "H", "I" and "T" records, and what the engine keeps
// in memory for listings and retention.
struct StepEntrySummary {
  uint64_t count = 0;  // stored entries (distinct steps; (step, index) pairs for images)
  int64_t first_step = 0;
  int64_t last_step = 0;
  // No stored entry is older than this (a lower bound: replacing an entry may leave it lower than
  // the oldest time; retention recomputes it exactly when it scans).
  double min_time = std::numeric_limits<double>::infinity();

  // Counts an entry at `step` that was not stored before.
  void Include(int64_t step, double time);
  // True if `step` lies outside [first_step, last_step] (so no entry is stored there).
  bool Outside(int64_t step) const { return count == 0 || step < first_step || step > last_step; }
};

// The "H"/"I"/"T" value (docs/format/store.md).
std::string EncodeStepEntrySummary(const StepEntrySummary& summary);
bool DecodeStepEntrySummary(std::string_view data, StepEntrySummary* summary);

}  // namespace trainwatch::storage
