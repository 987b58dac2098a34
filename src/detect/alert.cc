#include "detect/alert.h"

#include <cmath>
#include <cstdio>

namespace trainwatch::detect {

std::string_view KindName(AlertKind kind) {
  switch (kind) {
    case AlertKind::kNan: return "nan";
    case AlertKind::kGradExplosion: return "grad_explosion";
    case AlertKind::kGradVanishing: return "grad_vanishing";
    case AlertKind::kLossSpike: return "loss_spike";
    case AlertKind::kLossOscillation: return "loss_oscillation";
    case AlertKind::kDivergence: return "divergence";
    case AlertKind::kPlateau: return "plateau";
    case AlertKind::kOverfitting: return "overfitting";
    case AlertKind::kStalled: return "stalled";
    case AlertKind::kThroughputDrop: return "throughput_drop";
  }
  return "unknown";
}

std::string_view DefaultSeverity(AlertKind kind) {
  switch (kind) {
    case AlertKind::kNan:
    case AlertKind::kGradExplosion:
    case AlertKind::kDivergence:
    case AlertKind::kStalled:
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

namespace {

void AppendString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          *out += buf;
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void AppendNumber(double v, std::string* out) {
  if (!std::isfinite(v)) {
    *out += "null";
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  *out += buf;
}

}  // namespace

std::string AlertToJson(const Alert& a) {
  std::string out = "{\"run\":";
  AppendString(a.run, &out);
  out += ",\"kind\":";
  AppendString(a.kind, &out);
  out += ",\"metric\":";
  AppendString(a.metric, &out);
  out += ",\"step\":" + std::to_string(a.step) + ",\"time\":";
  AppendNumber(a.time, &out);
  out += ",\"value\":";
  AppendNumber(a.value, &out);
  out += ",\"severity\":";
  AppendString(a.severity, &out);
  out += ",\"message\":";
  AppendString(a.message, &out);
  if (a.state == AlertState::kResolved) out += ",\"state\":\"resolved\"";
  out += "}";
  return out;
}

}  // namespace trainwatch::detect
