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
  size_t first = out->size();
  time_.CheckStalled(now, sink);
  OpenIncidents(*out, first);
}

void RunDetector::OpenIncidents(const std::vector<Alert>& out, size_t first) {
  for (size_t i = first; i < out.size(); ++i) {
    if (out[i].state != AlertState::kFiring) continue;
    for (int k = 0; k < kAlertKindCount; ++k) {
      if (KindName(static_cast<AlertKind>(k)) != out[i].kind) continue;
      Incident& incident = incidents_[k];
      incident.open = true;
      incident.clear = 0;
      incident.metric = out[i].metric;
    }
  }
}

void RunDetector::ObserveCondition(AlertKind kind, bool holding, int64_t needed, int64_t step, double time,
                                   std::vector<Alert>* out) {
  Incident& incident = incidents_[static_cast<int>(kind)];
  if (!incident.open) return;
  if (holding) {
    incident.clear = 0;
    return;
  }
  if (++incident.clear < std::max<int64_t>(1, needed)) return;
  incident.open = false;
  Alert a;
  a.state = AlertState::kResolved;
  a.run = run_;
  a.kind = std::string(KindName(kind));
  a.metric = incident.metric;
  a.step = step;
  a.time = time;
  a.severity = std::string(DefaultSeverity(kind));
  a.message = Format("%s cleared at step %lld", a.kind.c_str(), static_cast<long long>(step));
  out->push_back(std::move(a));
}

void RunDetector::ObserveTrainingConditions(int64_t step, double time, bool nonfinite, bool had_grad_norm,
                                            std::vector<Alert>* out) {
  const int64_t n = options_.resolve_records;
  ObserveCondition(AlertKind::kNan, nonfinite, n, step, time, out);
  if (nonfinite) return;  // the other detectors did not look at this record
  if (had_grad_norm) ObserveCondition(AlertKind::kGradExplosion, explosion_.Holding(), n, step, time, out);
  ObserveCondition(AlertKind::kGradVanishing, vanishing_.Holding(), n, step, time, out);
  ObserveCondition(AlertKind::kLossSpike, spike_.Holding(), n, step, time, out);
  ObserveCondition(AlertKind::kDivergence, trend_.DivergenceHolding(), n, step, time, out);
  ObserveCondition(AlertKind::kLossOscillation, trend_.OscillationHolding(), n, step, time, out);
  ObserveCondition(AlertKind::kPlateau, plateau_.Holding(), n, step, time, out);
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
  const size_t first = out->size();
  ++records_;
  // A step below the previous record's: the run resumed from a checkpoint (once, not again for
  // every record it replays below the old maximum).
  if (last_step_ && step < *last_step_) Resume(step);
  last_step_ = step;
  const bool stalled = time_.Stalled();
  time_.Observe(step, time, sink);
  OpenIncidents(*out, first);
  if (stalled) ObserveCondition(AlertKind::kStalled, time_.Stalled(), 1, step, time, out);
  ObserveCondition(AlertKind::kThroughputDrop, time_.ThroughputHolding(), options_.resolve_records, step, time,
                   out);

  layout_.Update(metrics, options_.bindings);
  train_.clear();
  for (int i : layout_.train()) train_.push_back(metrics[static_cast<size_t>(i)]);
  if (!train_.empty()) {
    steps_ = train_step_ ? std::max<int64_t>(1, step - *train_step_) : 1;
    train_step_ = step;
    size_t before = out->size();
    bool finite = NanCheck(step, options_.nan_include_eval ? metrics : MetricSpan(train_), sink);
    if (finite) TrainingDetectors(step, metrics, sink);
    OpenIncidents(*out, before);
    bool had_grad_norm = layout_.grad_norm != RecordLayout::kNone;
    ObserveTrainingConditions(step, time, !finite, had_grad_norm, out);
    if (!finite) return;
  }
  if (layout_.eval_loss != RecordLayout::kNone && std::isfinite(metrics[layout_.eval_loss].second)) {
    const auto& [name, value] = metrics[static_cast<size_t>(layout_.eval_loss)];
    size_t before = out->size();
    overfit_.Observe(step, value, trend_.level(), name, sink);
    OpenIncidents(*out, before);
    ObserveCondition(AlertKind::kOverfitting, overfit_.Holding(), options_.resolve_records, step, time, out);
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

void RunDetector::TrainingDetectors(int64_t step, MetricSpan metrics, AlertSink& sink) {
  auto pick = [&](int index) -> std::optional<Picked> {
    if (index == RecordLayout::kNone) return std::nullopt;
    return Picked{metrics[static_cast<size_t>(index)].first, metrics[static_cast<size_t>(index)].second};
  };
  auto loss = pick(layout_.loss);
  auto lr = pick(layout_.lr);
  auto gn = pick(layout_.grad_norm);
  auto ur = pick(layout_.update_ratio);

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
  vanishing_.Observe(step, metrics, layout_.layers(), layout_.version(), steps_, sink);
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
