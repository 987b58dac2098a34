#include "detect/inhibitor.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace trainwatch::detect {
namespace {

int Index(AlertKind kind) { return static_cast<int>(kind); }

bool IsPersistentFault(AlertKind kind) {
  return kind == AlertKind::kGradExplosion || kind == AlertKind::kDivergence ||
         kind == AlertKind::kGradVanishing || kind == AlertKind::kPlateau ||
         kind == AlertKind::kLossOscillation;
}

}  // namespace

void Inhibitor::SuppressUntil(AlertKind kind, int64_t until) {
  int64_t& u = until_[Index(kind)];
  u = std::max(u, until);
}

void Inhibitor::SuppressTraining() {
  for (int i = 0; i < kAlertKindCount; ++i) {
    if (IsTrainingKind(static_cast<AlertKind>(i))) until_[i] = kForever;
  }
}

bool Inhibitor::Suppressed(AlertKind kind, int64_t step) const {
  return until_[Index(kind)] >= step;
}

bool Inhibitor::Emit(const std::string& run, AlertKind kind, std::string_view metric, int64_t step,
                     double time, double value, std::string message, const Evidence& evidence,
                     bool transient, std::vector<Alert>* out) {
  if (Suppressed(kind, step)) return false;
  Alert a;
  a.run = run;
  a.kind = std::string(KindName(kind));
  a.metric = std::string(metric);
  a.step = step;
  a.time = time;
  a.value = value;
  a.severity = std::string(DefaultSeverity(kind));
  a.message = std::move(message);
  a.evidence = evidence;
  out->push_back(std::move(a));
  // A persistent training fault: later training-side alerts are its consequences.
  if (IsPersistentFault(kind) && !transient) SuppressTraining();
  // The corrupted batch's gradient spikes with the loss.
  if (kind == AlertKind::kLossSpike) SuppressUntil(AlertKind::kGradExplosion, step + 5);
  // Overfitting is reported once per run.
  if (kind == AlertKind::kOverfitting) SuppressUntil(AlertKind::kOverfitting, kForever);
  return true;
}

std::string Format(const char* format, ...) {
  char buf[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

}  // namespace trainwatch::detect
