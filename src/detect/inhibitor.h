// Inhibitor: incident grouping and inhibition (design section 3), and the one place alerts are
// emitted. Bounded state: one "suppressed until step" per kind.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "detect/alert.h"

namespace trainwatch::detect {

class Inhibitor {
 public:
  static constexpr int64_t kForever = INT64_MAX;

  // Inhibits `kind` at every step <= until (never shortens an earlier inhibition).
  void SuppressUntil(AlertKind kind, int64_t until);
  // Inhibits the seven training-behaviour kinds for the rest of the run.
  void SuppressTraining();
  bool Suppressed(AlertKind kind, int64_t step) const;

  // Appends an alert to *out unless `kind` is inhibited at `step`, then applies the inhibition
  // rules the alert triggers (a `transient` one never inhibits the other training kinds). Returns
  // whether the alert was emitted.
  bool Emit(const std::string& run, AlertKind kind, std::string_view metric, int64_t step, double time,
            double value, std::string message, const Evidence& evidence, bool transient, std::vector<Alert>* out);

 private:
  std::array<int64_t, kAlertKindCount> until_ = [] {
    std::array<int64_t, kAlertKindCount> a;
    a.fill(-1);
    return a;
  }();
};

// What a detector needs to report: the run's inhibitor plus the record's context. Borrowed for
// one call; never stored.
struct AlertSink {
  Inhibitor& inhibitor;
  const std::string& run;
  double time;                 // the current record's timestamp
  std::vector<Alert>* out;

  bool Emit(AlertKind kind, std::string_view metric, int64_t step, double value, std::string message,
            const Evidence& evidence = {}) {
    return inhibitor.Emit(run, kind, metric, step, time, value, std::move(message), evidence, false, out);
  }
  // The same for a one-record incident of a persistent kind: it does not inhibit the others.
  bool EmitTransient(AlertKind kind, std::string_view metric, int64_t step, double value, std::string message,
                     const Evidence& evidence) {
    return inhibitor.Emit(run, kind, metric, step, time, value, std::move(message), evidence, true, out);
  }
};

// printf-style formatting for alert messages.
std::string Format(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace trainwatch::detect
