#include "detect/run_detector.h"

#include <algorithm>
#include <cmath>

#include "detect/metric_bindings.h"

namespace trainwatch::detect {

RunDetector::RunDetector(std::string run, DetectorOptions options)
    : run_(std::move(run)),
      options_(std::move(options)),
      time_(options_),
      lr_(options_),
      explosion_(options_),
      vanishing_(options_),
      spike_(options_),
      trend_(options_),
      plateau_(options_),
      overfit_(options_) {}

void RunDetector::CheckStalled(double now, std::vector<Alert>* out) {
  AlertSink sink{inhibitor_, run_, now, out};
  time_.CheckStalled(now, sink);
}

void RunDetector::Resume(int64_t step) {
  // Resumed from a checkpoint: no time delta across the restart; the loss detectors re-arm after
  // a short re-warm (the reload can bump the loss). Baselines are kept: it is the same model.
  time_.ForgetLastTime();
  restart_until_ = step + options_.resume_window;
  spike_.DropCandidate();
}

void RunDetector::Observe(int64_t step, double time, std::span<const std::pair<std::string_view, double>> metrics,
                          std::vector<Alert>* out) {
  AlertSink sink{inhibitor_, run_, time, out};
  ++records_;
  if (max_step_ && step < *max_step_) Resume(step);
  if (!max_step_ || step > *max_step_) max_step_ = step;
  time_.Observe(step, time, sink);

  train_.clear();
  for (const auto& m : metrics) {
    if (!IsEvalMetric(m.first, options_.bindings)) train_.push_back(m);
  }
  if (!train_.empty()) {
    steps_ = train_step_ ? std::max<int64_t>(1, step - *train_step_) : 1;
    train_step_ = step;
    if (!NanCheck(step, options_.nan_include_eval ? metrics : MetricSpan(train_), sink)) return;
    TrainingDetectors(step, sink);
  }
  if (auto v = PickMetric(metrics, options_.bindings.eval_loss); v && std::isfinite(v->value)) {
    overfit_.Observe(step, v->value, trend_.level(), v->name, sink);
  }
}

bool RunDetector::NanCheck(int64_t step, MetricSpan metrics, AlertSink& sink) {
  std::string_view first_bad;
  bool nonfinite = false;
  for (const auto& [name, value] : metrics) {
    if (!std::isfinite(value)) {
      nonfinite = true;
      first_bad = name;
      break;
    }
  }
  if (nonfinite && !prev_nonfinite_) {
    sink.Emit(AlertKind::kNan, first_bad, step, 0,
              Format("non-finite value of %.*s", static_cast<int>(first_bad.size()), first_bad.data()));
  }
  prev_nonfinite_ = nonfinite;
  if (!nonfinite) {
    nonfinite_run_ = 0;
    return true;
  }
  // The run is dead: everything else is a consequence.
  if (++nonfinite_run_ >= options_.dead_after) inhibitor_.SuppressTraining();
  return false;
}

void RunDetector::TrainingDetectors(int64_t step, AlertSink& sink) {
  const MetricBindings& b = options_.bindings;
  auto loss = PickLoss(train_, b);
  auto lr = PickMetric(train_, b.lr);
  auto gn = PickMetric(train_, b.grad_norm);
  auto ur = PickMetric(train_, b.update_ratio);

  if (lr && std::isfinite(lr->value)) {
    ShockBaselines baselines{explosion_.baseline(), trend_.level(), trend_.variability(), spike_.ready()};
    switch (lr_.Observe(step, lr->value, records_, baselines)) {
      case LrContext::Event::kShockOpened:
        inhibitor_.SuppressUntil(AlertKind::kLossSpike, step + options_.shock_window);
        break;
      case LrContext::Event::kWarmRestart:
        restart_until_ = step + options_.restart_window;
        trend_.ResetMinimum();
        break;
      case LrContext::Event::kNone:
        break;
    }
  }
  if (gn) explosion_.Observe(step, gn->value, steps_, lr_.shock(), sink);
  vanishing_.Observe(step, train_, steps_, sink);
  if (loss && std::isfinite(loss->value)) {
    double ll = std::log(std::max(loss->value, 1e-12));
    bool ready = spike_.ready();
    bool armed = step > restart_until_;
    spike_.Observe(step, ll, steps_, armed && !lr_.shock(), loss->name, sink);
    trend_.Observe(step, ll, steps_, ready, armed, lr_.shock(), loss->name, sink);
  }
  std::optional<double> lr_value = lr ? std::optional<double>(lr->value) : std::nullopt;
  std::optional<double> ur_value = ur ? std::optional<double>(ur->value) : std::nullopt;
  plateau_.Observe(step, ur_value, lr_value, lr_, steps_, sink);
}

}  // namespace trainwatch::detect
