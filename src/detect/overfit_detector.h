// OverfitDetector: the eval loss turned up sharply soon after its minimum while the train loss
// kept falling (design section 2, overfitting). State: 9 scalars.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "detect/inhibitor.h"
#include "detect/options.h"

namespace trainwatch::detect {

class OverfitDetector {
 public:
  explicit OverfitDetector(const DetectorOptions& options) : options_(options) {}

  // One finite eval loss v; `train_level` is the slow train-loss level m_slow (ln).
  void Observe(int64_t step, double v, double train_level, std::string_view metric, AlertSink& sink);
  // Whether the smoothed eval loss is still above its minimum by half the rise threshold.
  bool Holding() const { return holding_; }

 private:
  const DetectorOptions& options_;
  int64_t evals_ = 0;
  std::optional<double> last_;      // previous ln v
  std::optional<double> last_d1_;   // previous first difference
  double noise_ = 0;                // eval noise sigma estimate
  double smooth_ = 0;               // smoothed ln v
  std::optional<double> min_;       // smoothed minimum
  int64_t min_step_ = 0;
  double train_at_min_ = 0;
  int64_t since_min_ = 0;
  int64_t up_ = 0;
  bool holding_ = false;
};

}  // namespace trainwatch::detect
