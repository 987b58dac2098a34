// LossTrendDetector: the slow loss level and its step-to-step variability; classifies an open LR
// shock as loss_oscillation or divergence, and detects generic divergence without a shock (design
// section 2). State: three Ewmas and five scalars.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "detect/ewma.h"
#include "detect/inhibitor.h"
#include "detect/lr_context.h"
#include "detect/options.h"

namespace trainwatch::detect {

class LossTrendDetector {
 public:
  explicit LossTrendDetector(const DetectorOptions& options)
      : options_(options), slow_(options.a_slow), dif_base_(options.a_dif_base), dif_fast_(options.a_dif_fast) {}

  // One finite log loss. `ready`: the loss baseline was warm before this record; `armed`: outside
  // a restart window. May close `shock` (after shock_window steps).
  void Observe(int64_t step, double ll, int64_t steps, bool ready, bool armed, std::optional<Shock>& shock,
               std::string_view metric, AlertSink& sink);
  // A warm restart: the loss is expected to rise, forget the running minimum.
  void ResetMinimum() { lo_min_.reset(); }

  double level() const { return slow_.mean(); }            // m_slow (ln)
  double variability() const { return dif_base_.mean(); }  // dif baseline

 private:
  void ClassifyShock(int64_t step, const Shock& shock, std::string_view metric, AlertSink& sink);
  void GenericDivergence(int64_t step, std::string_view metric, AlertSink& sink);

  const DetectorOptions& options_;
  Ewma slow_;
  Ewma dif_base_;
  Ewma dif_fast_;
  std::optional<double> last_ll_;
  std::optional<double> lo_min_;
  std::optional<int64_t> div_since_;
};

}  // namespace trainwatch::detect
