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
  spike_.Reset();
}

bool RunDetector::IsRunLoss(MetricSpan metrics) {
  if (layout_.loss == RecordLayout::kNone) return false;
  std::string_view name = metrics[static_cast<size_t>(layout_.loss)].first;
  if (name == loss_name_) return true;
  const auto& names = options_.bindings.loss;
  size_t rank = static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
  if (!loss_name_.empty() && rank >= loss_rank_) return false;
  if (!loss_name_.empty()) spike_.Reset();  // a better name for the loss appeared: start over with it
  loss_name_ = std::string(name);
  loss_rank_ = rank;
  return true;
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
  time_.Observe(step, time, cadence_, sink);
  OpenIncidents(*out, first);
  if (stalled) ObserveCondition(AlertKind::kStalled, time_.Stalled(), 1, step, time, out);
  ObserveCondition(AlertKind::kThroughputDrop, time_.ThroughputHolding(), options_.resolve_records, step, time,
                   out);

  layout_.Update(metrics, options_.bindings);
  train_.clear();
  for (int i : layout_.train()) train_.push_back(metrics[static_cast<size_t>(i)]);
  has_loss_ = IsRunLoss(metrics);
  training_record_ = has_loss_ || layout_.grad_norm != RecordLayout::kNone;
  if (training_record_) {
    // A training step: it advances the cadence.
    steps_ = train_step_ ? std::max<int64_t>(1, step - *train_step_) : 1;
    if (train_step_ && cadence_.Observe(steps_)) {
      explosion_.ForgetWindow();
      spike_.Reset();
    }
    train_step_ = step;
    train_since_eval_ = true;
  }
  if (!train_.empty()) {
    size_t before = out->size();
    bool finite = NanCheck(step, options_.nan_include_eval ? metrics : MetricSpan(train_), sink);
    if (finite) TrainingDetectors(step, metrics, sink);
    OpenIncidents(*out, before);
    bool had_grad_norm = layout_.grad_norm != RecordLayout::kNone;
    ObserveTrainingConditions(step, time, !finite, had_grad_norm, out);
    if (!finite) return;
  }
  EvalDetectors(step, time, metrics, out);
}

void RunDetector::EvalDetectors(int64_t step, double time, MetricSpan metrics, std::vector<Alert>* out) {
  if (layout_.eval_loss == RecordLayout::kNone) return;
  AlertSink sink{inhibitor_, run_, time, out};
  const auto& [name, value] = metrics[static_cast<size_t>(layout_.eval_loss)];
  // Only eval records since the last one: the training records stopped, and what happens to
  // the model is seen in its evals alone.
  const bool eval_only = !train_since_eval_ && !training_record_;
  train_since_eval_ = training_record_;
  size_t before = out->size();
  if (!std::isfinite(value)) {
    if (eval_only && !eval_nan_ && !prev_nonfinite_) {
      eval_nan_ = true;
      sink.Emit(AlertKind::kNan, name, step, 0,
                Format("non-finite %.*s while no training record was logged since the previous eval",
                       static_cast<int>(name.size()), name.data()));
    }
    OpenIncidents(*out, before);
    return;
  }
  const double lv = std::log(std::max(value, 1e-12));
  const double limit = options_.sensitivity * std::log(options_.div_eval_ratio);
  if (eval_only && eval_best_ && lv - *eval_best_ > limit) {
    double ratio = std::exp(lv - *eval_best_);
    sink.Emit(AlertKind::kDivergence, name, step, ratio,
              Format("%.*s %.4g is %.1fx its best %.4g, and no training record was logged since the previous eval",
                     static_cast<int>(name.size()), name.data(), value, ratio, std::exp(*eval_best_)),
              Evidence{value, std::exp(*eval_best_), ratio, 0});
  }
  if (!eval_best_ || lv < *eval_best_) eval_best_ = lv;
  overfit_.Observe(step, value, trend_.level(), name, sink);
  OpenIncidents(*out, before);
  ObserveCondition(AlertKind::kOverfitting, overfit_.Holding(), options_.resolve_records, step, time, out);
}

void RunDetector::WarmupDivergence(int64_t step, const Picked& loss, const std::optional<Picked>& lr, bool armed,
                                   AlertSink& sink) {
  const int64_t held = spike_.excursion_records();
  if (held == 1) excursion_lr_ = lr && std::isfinite(lr->value) ? lr->value : NAN;
  if (!armed || held != options_.div_warmup_records || !lr || !(lr->value > excursion_lr_)) return;
  // The loss jumped and stayed up while the lr kept climbing: the warm-up (or a schedule that
  // grows) pushed the run past its stable step size. A spike comes back; this one is driven.
  const double base = std::exp(spike_.excursion_base());
  const double ratio = loss.value / base;
  sink.Emit(AlertKind::kDivergence, loss.name, step, ratio,
            Format("%.*s %.4g has stayed above %.4g for %lld records while the lr rose from %.3g to %.3g",
                   static_cast<int>(loss.name.size()), loss.name.data(), loss.value, base,
                   static_cast<long long>(held), excursion_lr_, lr->value),
            Evidence{loss.value, base, ratio, held});
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

  // The values an EWMA baseline needs at this cadence.
  const int64_t warm = cadence_.RecordsFor(options_.warm, options_.warm_records);
  if (lr && std::isfinite(lr->value)) {
    // At sparse cadences the level before the shock is the recent one: an EWMA of the first few
    // records still holds the early fall of the loss.
    const double level = cadence_.sparse() ? trend_.RecentLevel() : trend_.level();
    ShockBaselines baselines{explosion_.baseline(), level, trend_.variability(), trend_.count() >= warm};
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
  if (gn) explosion_.Observe(step, gn->value, steps_, warm, lr_.shock(), sink);
  vanishing_.Observe(step, metrics, layout_.layers(), layout_.version(), steps_, warm, cadence_, sink);
  if (loss && has_loss_ && std::isfinite(loss->value)) {
    double ll = std::log(std::max(loss->value, 1e-12));
    bool ready = trend_.count() >= warm;
    bool armed = step > restart_until_;
    spike_.Observe(step, ll, armed && !lr_.shock(), !cadence_.sparse(), loss->name, sink);
    if (spike_.TakeNewLevel()) trend_.ResetMinimum();  // a jump that stayed is a level, not a rise
    WarmupDivergence(step, *loss, lr, armed, sink);
    trend_.Observe(step, ll, steps_, ready, armed && !spike_.InExcursion(),
                   cadence_.RecordsFor(options_.div_persist, options_.warm_records),
                   cadence_.sparse(), lr_.shock(), loss->name, sink);
  }
  std::optional<double> lr_value = lr ? std::optional<double>(lr->value) : std::nullopt;
  std::optional<double> ur_value = ur ? std::optional<double>(ur->value) : std::nullopt;
  plateau_.Observe(step, ur_value, lr_value, lr_, steps_, warm, cadence_, sink);
}

}  // namespace trainwatch::detect
