// Durations in rule files: "30s", "10m", "1h30m" (record time) and "200 steps" (a `for` hold).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/duration.h"
#include "common/status.h"

namespace trainwatch::rules {

using ::trainwatch::ParseDuration;  // common/duration.h

// How long a rule's condition must hold before it fires: nothing (fire at once), record time, or
// steps. A plain value type.
struct Hold {
  enum class Unit { kNone, kSeconds, kSteps };
  Unit unit = Unit::kNone;
  double seconds = 0;  // kSeconds: > 0
  int64_t steps = 0;   // kSteps: > 0

  // "" for kNone, "600s", "200 steps": the canonical form (used in rule fingerprints).
  std::string ToString() const;
  friend bool operator==(const Hold&, const Hold&) = default;
};

// A `for:` value: a duration with a unit ("10m", "1h30m") or "<integer> steps" ("200 steps",
// "1 step"). "0", "0s" and "0 steps" mean no hold. A bare non-zero number is rejected: it would be
// ambiguous between seconds and steps.
Result<Hold> ParseHold(std::string_view text);

}  // namespace trainwatch::rules
