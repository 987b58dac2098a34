// PlateauDetector: the updates effectively stopped (design section 2, plateau). Uses the update
// ratio when bound, else a one-record lr drop that persists. State: one Ewma and a counter.
#pragma once

#include <cstdint>
#include <optional>

#include "detect/cadence.h"
#include "detect/ewma.h"
#include "detect/inhibitor.h"
#include "detect/lr_context.h"
#include "detect/options.h"

namespace trainwatch::detect {

class PlateauDetector {
 public:
  explicit PlateauDetector(const DetectorOptions& options)
      : options_(options), ur_(options.a_slow, options.a_record_max) {}

  // One training record: its update ratio and lr when bound (finite), and the LR context after
  // this record's lr. `warm`: the values the baseline needs at the run's cadence; the persistence
  // is converted through `cadence`.
  void Observe(int64_t step, std::optional<double> update_ratio, std::optional<double> lr, const LrContext& lr_context,
               int64_t steps, int64_t warm, const Cadence& cadence, AlertSink& sink);
  // Whether the last record still showed the collapse: an update ratio below half the threshold
  // (log scale) of its baseline, or the lr still at the dropped level.
  bool Holding() const { return holding_; }

 private:
  const DetectorOptions& options_;
  Ewma ur_;
  int64_t count_ = 0;
  bool holding_ = false;
};

}  // namespace trainwatch::detect
