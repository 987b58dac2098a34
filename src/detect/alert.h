// Alert: what a detector reports, and the closed set of alert kinds.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace trainwatch::detect {

enum class AlertKind {
  kNan,
  kGradExplosion,
  kGradVanishing,
  kLossSpike,
  kLossOscillation,
  kDivergence,
  kPlateau,
  kOverfitting,
  kStalled,
  kThroughputDrop,
  // Distributed runs (docs/distributed.md): judged across the ranks of one run (RankDetector).
  kStraggler,
  kRankDesync,
  kRankDead,
  kCollectiveHang,
};
inline constexpr int kAlertKindCount = 14;

// The wire name ("grad_explosion", ...).
std::string_view KindName(AlertKind kind);
// The kind of a wire name; nullopt for anything else.
std::optional<AlertKind> KindFromName(std::string_view name);
// "critical", "warning" or "info".
std::string_view DefaultSeverity(AlertKind kind);
// The seven kinds that describe training behaviour (inhibited together by persistent faults).
bool IsTrainingKind(AlertKind kind);

// A detector reports an incident when it starts (kFiring) and when its condition has cleared
// (kResolved: same run, kind and metric; step and time of the record that cleared it).
enum class AlertState { kFiring, kResolved };

// Why an alert fired: the value judged, the baseline it was compared with, their ratio, and how
// many logged records the baseline summarises (NaN / 0 where a rule has none).
struct Evidence {
  double observed = NAN;
  double baseline = NAN;
  double ratio = NAN;
  int64_t records = 0;
};

struct Alert {
  AlertState state = AlertState::kFiring;
  std::string run;
  std::string kind;    // KindName()
  std::string metric;  // the metric the rule looked at ("" for time-based kinds)
  int64_t step = 0;    // the step the incident is attributed to
  double time = 0;     // that record's own timestamp (NaN when the record had none)
  double value = 0;    // the rule's statistic (a ratio, a rise, a gap in seconds)
  std::string severity;
  std::string message;
  Evidence evidence;
  // The rank of a distributed run the incident concerns, and its host; -1 / "" when it concerns
  // the run (or a run that is not distributed). An incident is one per (run, kind, rank).
  int64_t rank = -1;
  std::string host;
  // Extra labels (collective_hang grouped under a rank_dead: caused_by, cause_rank, cause_host;
  // nan: the ranks that showed it first).
  std::map<std::string, std::string> labels;
};

}  // namespace trainwatch::detect
