// LossTrendDetector: the slow loss level and its step-to-step variability; classifies an open LR
// shock as loss_oscillation or divergence, and detects generic divergence without a shock (design
// section 2). State: three Ewmas, a window of the last 3 log losses and a few scalars.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include "detect/ewma.h"
#include "detect/inhibitor.h"
#include "detect/lr_context.h"
#include "detect/options.h"
#include "detect/robust_window.h"

namespace trainwatch::detect {

class LossTrendDetector {
 public:
  explicit LossTrendDetector(const DetectorOptions& options)
      : options_(options),
        slow_(options.a_slow, options.a_record_max),
        dif_base_(options.a_dif_base, options.a_record_max),
        dif_fast_(options.a_dif_fast, options.a_record_max) {}

  // One finite log loss. `ready`: the loss baseline was warm before this record; `armed`: outside
  // a restart window; `persist`: the records that cover div_persist steps at the run's cadence;
  // `sparse`: the cadence is sparse, so a shock is judged on the median of the last 3 logged
  // losses (the slow EWMA would still be catching up when the classification window ends). May
  // close `shock` (after shock_window steps).
  void Observe(int64_t step, double ll, int64_t steps, bool ready, bool armed, int64_t persist, bool sparse,
               std::optional<Shock>& shock, std::string_view metric, AlertSink& sink);
  // A warm restart: the loss is expected to rise, forget the running minimum.
  void ResetMinimum() { lo_min_.reset(); }

  double level() const { return slow_.mean(); }            // m_slow (ln)
  int64_t count() const { return slow_.count(); }          // losses learned
  double RecentLevel() const;  // median of the last 3 log losses (m_slow before there are 3)
  double variability() const { return dif_base_.mean(); }  // dif baseline

  // After a divergence alert: whether the smoothed log loss is still above the alert's reference
  // level (the minimum, or the level before the lr excursion) by half of div_rise.
  bool DivergenceHolding() const { return div_ref_ && slow_.mean() - *div_ref_ > options_.div_rise / 2; }
  // After an oscillation alert: whether the fast variability is still above the square root of
  // osc_ratio times the variability before the excursion (half the threshold, log scale).
  bool OscillationHolding() const {
    return osc_ref_ && dif_fast_.mean() / *osc_ref_ > std::sqrt(options_.osc_ratio);
  }

 private:
  void ClassifyShock(int64_t step, const Shock& shock, bool sparse, std::string_view metric, AlertSink& sink);
  void GenericDivergence(int64_t step, int64_t persist, std::string_view metric, AlertSink& sink);

  const DetectorOptions& options_;
  Ewma slow_;
  Ewma dif_base_;
  Ewma dif_fast_;
  std::optional<double> last_ll_;
  RobustWindow recent_{3};  // the last 3 log losses
  std::optional<double> lo_min_;
  std::optional<int64_t> div_since_;
  int64_t div_records_ = 0;  // records since div_since_
  std::optional<double> div_ref_;  // reference level (ln) of the last divergence alert
  std::optional<double> osc_ref_;  // reference variability of the last oscillation alert
};

}  // namespace trainwatch::detect
