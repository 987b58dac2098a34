#include "detect/alert.h"

namespace trainwatch::detect {

std::string_view KindName(AlertKind kind) {
  switch (kind) {
    case AlertKind::kNan:
      return "nan";
    case AlertKind::kGradExplosion:
      return "grad_explosion";
    case AlertKind::kGradVanishing:
      return "grad_vanishing";
    case AlertKind::kLossSpike:
      return "loss_spike";
    case AlertKind::kLossOscillation:
      return "loss_oscillation";
    case AlertKind::kDivergence:
      return "divergence";
    case AlertKind::kPlateau:
      return "plateau";
    case AlertKind::kOverfitting:
      return "overfitting";
    case AlertKind::kStalled:
      return "stalled";
    case AlertKind::kThroughputDrop:
      return "throughput_drop";
    case AlertKind::kStraggler:
      return "straggler";
    case AlertKind::kRankDesync:
      return "rank_desync";
    case AlertKind::kRankDead:
      return "rank_dead";
    case AlertKind::kCollectiveHang:
      return "collective_hang";
  }
  return "unknown";
}

std::optional<AlertKind> KindFromName(std::string_view name) {
  for (int k = 0; k < kAlertKindCount; ++k) {
    auto kind = static_cast<AlertKind>(k);
    if (KindName(kind) == name) return kind;
  }
  return std::nullopt;
}

std::string_view DefaultSeverity(AlertKind kind) {
  switch (kind) {
    case AlertKind::kNan:
    case AlertKind::kGradExplosion:
    case AlertKind::kDivergence:
    case AlertKind::kStalled:
    case AlertKind::kRankDead:
    case AlertKind::kCollectiveHang:
      return "critical";
    case AlertKind::kOverfitting:
      return "info";  // inherently ambiguous (design section 5)
    default:
      return "warning";
  }
}

bool IsTrainingKind(AlertKind kind) {
  switch (kind) {
    case AlertKind::kLossSpike:
    case AlertKind::kLossOscillation:
    case AlertKind::kDivergence:
    case AlertKind::kPlateau:
    case AlertKind::kGradVanishing:
    case AlertKind::kOverfitting:
    case AlertKind::kGradExplosion:
      return true;
    default:
      return false;
  }
}

}  // namespace trainwatch::detect
