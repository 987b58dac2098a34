// RunDetector: every streaming anomaly detector of one run (docs/design/anomaly-detection.md).
// Feed it each committed record in commit order; it appends the alerts that record causes: an
// incident's start (AlertState::kFiring) and, once its condition has cleared for
// `resolve_records` observations, its end (kResolved; `stalled` resolves at the next step). State
// is bounded (O(1) per run plus one baseline per per-layer grad-norm series) and it never reads a
// clock: every rule uses the records' own timestamps, or the `now` handed to CheckStalled.
//
// Thread-safety: none; one owner calls it (the server serialises per run).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detect/alert.h"
#include "detect/cadence.h"
#include "detect/grad_explosion.h"
#include "detect/grad_vanishing.h"
#include "detect/inhibitor.h"
#include "detect/loss_spike.h"
#include "detect/loss_trend.h"
#include "detect/lr_context.h"
#include "detect/options.h"
#include "detect/overfit_detector.h"
#include "detect/plateau_detector.h"
#include "detect/record_layout.h"
#include "detect/time_detectors.h"

namespace trainwatch::detect {

class RunDetector {
 public:
  explicit RunDetector(std::string run, DetectorOptions options = {});
  RunDetector(const RunDetector&) = delete;  // the detectors point at options_
  RunDetector& operator=(const RunDetector&) = delete;

  // One record: all metrics of one step (names borrowed for the call only), its timestamp in unix
  // seconds (NaN when the record has none). Alerts are appended to *out.
  void Observe(int64_t step, double time, std::span<const std::pair<std::string_view, double>> metrics,
               std::vector<Alert>* out);

  // `stalled` if no new step arrived for the stall threshold before `now`: offline the caller
  // passes the next record's time, online the server's clock. One alert per gap.
  void CheckStalled(double now, std::vector<Alert>* out);

  // Replaces the thresholds in place (a rule reload): every baseline and open incident is kept.
  void SetOptions(const DetectorOptions& options) {
    options_ = options;
    layout_.Invalidate();
  }

  const std::string& run() const { return run_; }
  const DetectorOptions& options() const { return options_; }

 private:
  void Resume(int64_t step);
  // Returns false when the record is non-finite (the later training detectors are skipped).
  bool NanCheck(int64_t step, MetricSpan metrics, AlertSink& sink);
  void TrainingDetectors(int64_t step, MetricSpan metrics, AlertSink& sink);
  // Whether the record's loss (layout_.loss) is this run's loss series: the first loss name a
  // run logs is its loss, unless a name earlier in the bindings' list appears later (then that
  // one is, from then on). Another name for the same role (AlgoPerf's eval-time `train/loss`
  // beside the step's `loss`) is a different series and is not mixed into the loss baselines.
  bool IsRunLoss(MetricSpan metrics);
  // divergence: a loss excursion that holds div_warmup_records records while the lr keeps rising.
  void WarmupDivergence(int64_t step, const Picked& loss, const std::optional<Picked>& lr, bool armed,
                        AlertSink& sink);
  // Eval-side signals: overfitting; divergence and nan seen only in eval records once the
  // training records have stopped.
  void EvalDetectors(int64_t step, double time, MetricSpan metrics, std::vector<Alert>* out);

  // Incidents: which kinds are open, and how long their condition has been clear.
  struct Incident {
    bool open = false;
    int64_t clear = 0;  // consecutive observations without the condition
    std::string metric;
  };
  void OpenIncidents(const std::vector<Alert>& out, size_t first);
  // One observation of `kind`'s condition; appends the resolution when it has cleared long enough.
  void ObserveCondition(AlertKind kind, bool holding, int64_t needed, int64_t step, double time,
                        std::vector<Alert>* out);
  void ObserveTrainingConditions(int64_t step, double time, bool nonfinite, bool had_grad_norm,
                                 std::vector<Alert>* out);

  const std::string run_;
  // Detectors hold a reference to this member; SetOptions assigns it in place.
  DetectorOptions options_;
  Inhibitor inhibitor_;
  TimeDetectors time_;
  LrContext lr_;
  GradExplosionDetector explosion_;
  GradVanishingDetector vanishing_;
  LossSpikeDetector spike_;
  LossTrendDetector trend_;
  PlateauDetector plateau_;
  OverfitDetector overfit_;

  Cadence cadence_;
  std::string loss_name_;            // this run's loss series (IsRunLoss)
  size_t loss_rank_ = 0;             // its position in bindings.loss (the fallback ranks last)
  bool train_since_eval_ = true;     // a training record arrived since the last eval record
  std::optional<double> eval_best_;  // lowest eval log loss so far
  bool eval_nan_ = false;            // a non-finite eval loss already alerted
  double excursion_lr_ = NAN;        // the lr when the open loss excursion began
  int64_t records_ = 0;
  std::optional<int64_t> last_step_;  // the previous record's step
  std::optional<int64_t> train_step_;
  int64_t steps_ = 1;              // steps since the previous training record
  int64_t restart_until_ = -1;     // no loss_spike / generic divergence up to this step
  bool prev_nonfinite_ = false;
  bool has_loss_ = false;         // this record carries the run's loss
  bool training_record_ = false;  // ... or its grad norm: a training step
  int64_t nonfinite_run_ = 0;
  std::vector<std::pair<std::string_view, double>> train_;  // scratch: this record's training metrics
  std::array<Incident, kAlertKindCount> incidents_;
  RecordLayout layout_;
};

}  // namespace trainwatch::detect
